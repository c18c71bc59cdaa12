#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.mode=async actor_rollout_ref.rollout.expert_parallel_size=4 actor_rollout_ref.rollout.tensor_model_parallel_size=4 actor_rollout_ref.rollout.name=vllm
