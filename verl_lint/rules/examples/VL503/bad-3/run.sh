#!/bin/bash
export VLLM_ASCEND_ENABLE_PREFETCH_MLP=1
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm
