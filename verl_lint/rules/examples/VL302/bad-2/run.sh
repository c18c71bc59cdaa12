#!/bin/bash
python3 -m verl.trainer.main_ppo algorithm.adv_estimator=gae data.train_batch_size=64 actor_rollout_ref.actor.ppo_mini_batch_size=32 critic.ppo_mini_batch_size=128 actor_rollout_ref.rollout.name=vllm
