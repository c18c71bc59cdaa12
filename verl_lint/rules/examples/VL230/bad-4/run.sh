#!/bin/bash
python3 -m verl.trainer.main_ppo +actor_rollout_ref.critic.optim.lr=1e-5 actor_rollout_ref.rollout.name=vllm
