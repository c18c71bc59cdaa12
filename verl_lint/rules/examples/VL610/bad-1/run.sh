#!/bin/bash
export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:512
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm
