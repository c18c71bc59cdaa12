#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-30B-A3B algorithm.adv_estimator=grpo actor_rollout_ref.rollout.expert_parallel_size=2 actor_rollout_ref.rollout.tensor_model_parallel_size=2 actor_rollout_ref.rollout.data_parallel_size=1 actor_rollout_ref.rollout.name=vllm
