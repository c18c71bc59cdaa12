#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.skip_rollout=True actor_rollout_ref.rollout.name=vllm
