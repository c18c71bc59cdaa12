#!/bin/bash
export VLLM_USE_V1=1
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm
