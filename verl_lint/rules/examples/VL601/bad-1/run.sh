#!/bin/bash
export PYTORCH_CUDA_ALLOC_CONF=expandable_segment:True
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm
