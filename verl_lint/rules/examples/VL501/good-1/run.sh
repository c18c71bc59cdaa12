#!/bin/bash
export VLLM_ALLOW_LONG_MAX_MODEL_LEN=1
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm
