#!/bin/bash
export RAY_ADDRESS=10.0.0.1:6379
export VLLM_LOGGING_LEVEL=DEBUG
python3 -m verl.trainer.main_ppo trainer.nnodes=1 actor_rollout_ref.rollout.name=vllm
