#!/bin/bash
ray start --head --num-gpus 8
python3 -m verl.trainer.main_ppo trainer.nnodes=1 +ray_kwargs.ray_init.runtime_env.env_vars.NCCL_IB_DISABLE=1 actor_rollout_ref.rollout.name=vllm
