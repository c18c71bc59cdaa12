#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.load_format=dummy_dtensor actor_rollout_ref.rollout.name=vllm
