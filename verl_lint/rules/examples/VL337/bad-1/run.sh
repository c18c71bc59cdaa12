#!/bin/bash
# verl#606: 32 prompts a step on 16 nodes of 8 GPUs (train_batch_size x rollout.n = 256 divides 128)
python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo data.train_batch_size=32 actor_rollout_ref.actor.ppo_mini_batch_size=32 actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1 actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1 actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=1 actor_rollout_ref.rollout.n=8 actor_rollout_ref.rollout.tensor_model_parallel_size=2 trainer.n_gpus_per_node=8 trainer.nnodes=16
