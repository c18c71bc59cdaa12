#!/bin/bash
export VLLM_SLEEP_WHEN_IDLE=1
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm
