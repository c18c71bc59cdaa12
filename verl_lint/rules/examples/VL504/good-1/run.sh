#!/bin/bash
export VLLM_ALLOW_LONG_MAX_MODEL_LEN=1
export VLLM_ASCEND_ENABLE_NZ=0
export VLLM_LOGGING_LEVEL=INFO
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm
