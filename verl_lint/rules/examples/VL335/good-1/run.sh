#!/bin/bash
python3 -m verl.trainer.main_ppo model_engine=megatron actor_rollout_ref.model.path=deepseek-ai/DeepSeek-V2-Lite algorithm.adv_estimator=grpo actor_rollout_ref.actor.megatron.expert_model_parallel_size=4 actor_rollout_ref.rollout.name=vllm
