#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.ppo_mini_batch_size=12 data.train_batch_size=96 actor_rollout_ref.rollout.name=vllm
