#!/bin/bash
export PYTORCH_NPU_ALLOC_CONF=expandable_segments:False,base_addr_aligned_kb:4
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm
