#!/bin/bash
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False,pinned_use_cuda_host_register:True
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm
