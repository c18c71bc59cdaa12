#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8 actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16 actor_rollout_ref.actor.use_kl_loss=True algorithm.adv_estimator=grpo actor_rollout_ref.rollout.name=vllm
