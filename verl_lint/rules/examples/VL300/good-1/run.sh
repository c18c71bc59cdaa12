#!/bin/bash
python3 -m verl.trainer.main_ppo data.train_batch_size=256 actor_rollout_ref.actor.ppo_mini_batch_size=128 actor_rollout_ref.rollout.name=vllm
