#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.over_sample_rate=0.1 actor_rollout_ref.rollout.name=vllm
