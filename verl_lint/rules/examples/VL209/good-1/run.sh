#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.temperature=1.0 actor_rollout_ref.rollout.name=vllm
