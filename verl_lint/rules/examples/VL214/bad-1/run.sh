#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.freeze_vision_tower=True actor_rollout_ref.rollout.name=vllm
