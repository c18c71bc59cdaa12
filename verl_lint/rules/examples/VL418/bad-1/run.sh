#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.optim.warmup_style=cosine actor_rollout_ref.rollout.name=vllm
