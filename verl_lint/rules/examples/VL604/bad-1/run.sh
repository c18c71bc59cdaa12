#!/bin/bash
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False
export PYTORCH_ALLOC_CONF=expandable_segments:True
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm
