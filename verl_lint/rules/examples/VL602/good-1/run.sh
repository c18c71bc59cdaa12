#!/bin/bash
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False,pinned_num_register_threads:8
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm
