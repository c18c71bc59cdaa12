#!/bin/bash
export PYTORCH_CUDA_ALLOC_CONF='release_lock_on_cudamalloc:True, expandable_segments: True'
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=sglang
