#!/bin/bash
export VLLM_ASCEND_ENABLE_NZZ=0
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm
