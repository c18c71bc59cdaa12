#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.optim.total_training_steps=500 actor_rollout_ref.rollout.name=vllm
