#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.optim.clip_grad=0.5 actor_rollout_ref.rollout.name=vllm
