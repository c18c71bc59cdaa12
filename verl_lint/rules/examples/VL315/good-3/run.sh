#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.use_kl_loss=True actor_rollout_ref.rollout.name=vllm
