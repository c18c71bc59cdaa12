#!/bin/bash
export NCCL_IB_DISABLE=1
ray start --head --num-gpus 8
python3 -m verl.trainer.main_ppo trainer.nnodes=1 actor_rollout_ref.rollout.name=vllm
