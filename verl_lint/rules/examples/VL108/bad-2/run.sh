#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.optim.lr_scheduler_type=linear-warmup actor_rollout_ref.rollout.name=vllm
