#!/bin/bash
export PYTORCH_CUDA_ALLOC_CONF=garbage_collection_threshold:1.5
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm
