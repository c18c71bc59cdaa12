#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.clip_ratio=0.2 actor_rollout_ref.rollout.name=vllm
