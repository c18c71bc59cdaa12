#!/bin/bash
python3 -m verl.trainer.main_ppo reward.reward_model.enable=True actor_rollout_ref.rollout.name=vllm
