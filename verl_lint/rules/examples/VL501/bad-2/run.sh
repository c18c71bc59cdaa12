#!/bin/bash
export VLLM_ATTENTION_BACKEND=XFORMERS
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm
