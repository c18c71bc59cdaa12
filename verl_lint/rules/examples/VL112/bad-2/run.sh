#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.ppo_epochs= actor_rollout_ref.rollout.name=vllm
