#!/bin/bash
export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True,base_addr_aligned_kb:16
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=sglang
