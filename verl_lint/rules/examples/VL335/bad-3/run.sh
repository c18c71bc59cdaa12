#!/bin/bash
python3 -m verl.trainer.main_ppo model_engine=megatron actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct algorithm.adv_estimator=grpo actor_rollout_ref.actor.megatron.expert_model_parallel_size=2 actor_rollout_ref.rollout.name=vllm
