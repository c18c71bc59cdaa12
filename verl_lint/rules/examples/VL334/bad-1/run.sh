#!/bin/bash
python3 -m verl.trainer.main_ppo model_engine=megatron actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct algorithm.adv_estimator=grpo trainer.n_gpus_per_node=6 data.train_batch_size=240 actor_rollout_ref.actor.ppo_mini_batch_size=60 actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=3 actor_rollout_ref.rollout.name=vllm
