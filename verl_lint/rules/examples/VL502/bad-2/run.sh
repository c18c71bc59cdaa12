#!/bin/bash
export VLLM_TORCH_PROFILER_DIR=/tmp/prof
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm
