#!/bin/bash
python3 -m verl.trainer.main_ppo reward_manager.name=dapo actor_rollout_ref.rollout.name=vllm
