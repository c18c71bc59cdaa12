#!/bin/bash
python3 -m verl.trainer.main_ppo reward.custom_reward_function.path=/data/my_reward.py reward.custom_reward_function.name=compute_score actor_rollout_ref.rollout.name=vllm
