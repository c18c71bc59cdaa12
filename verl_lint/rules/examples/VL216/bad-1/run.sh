#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.nccl_timeout=3600 actor_rollout_ref.rollout.name=vllm
