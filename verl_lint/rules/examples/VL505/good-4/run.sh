#!/bin/bash
export RAY_ADDRESS=local
export NCCL_IB_DISABLE=1
python3 -m verl.trainer.main_ppo trainer.nnodes=1 actor_rollout_ref.rollout.name=vllm
