#!/bin/bash
export VLLM_ALL2ALL_BACKEND=deepep_low_latency
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=sglang
