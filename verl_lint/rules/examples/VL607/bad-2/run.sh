#!/bin/bash
export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm trainer.device=npu
