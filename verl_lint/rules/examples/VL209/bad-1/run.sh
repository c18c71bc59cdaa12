#!/bin/bash
python3 -m verl.trainer.main_ppo +actor_rollout_ref.rollout.repetition_penalty=1.1 actor_rollout_ref.rollout.name=vllm
