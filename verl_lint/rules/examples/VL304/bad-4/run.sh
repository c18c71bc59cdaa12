#!/bin/bash
python3 -m verl.trainer.main_ppo algorithm.adv_estimator=gae data.train_batch_size=96 actor_rollout_ref.actor.ppo_mini_batch_size=16 actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2 critic.ppo_mini_batch_size=16 critic.ppo_micro_batch_size_per_gpu=4 actor_rollout_ref.rollout.name=vllm
