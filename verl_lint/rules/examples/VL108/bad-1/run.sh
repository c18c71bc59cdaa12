#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.loss_agg_mode=True actor_rollout_ref.rollout.name=vllm
