#!/bin/bash
export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True,max_split_size_mb:512
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=sglang
