#!/bin/bash
python3 -m verl.trainer.main_ppo model_engine=megatron actor_rollout_ref.model.path=deepseek-ai/DeepSeek-V2-Lite algorithm.adv_estimator=grpo trainer.n_gpus_per_node=6 data.train_batch_size=240 actor_rollout_ref.actor.ppo_mini_batch_size=60 actor_rollout_ref.actor.megatron.expert_model_parallel_size=3 actor_rollout_ref.rollout.name=vllm
