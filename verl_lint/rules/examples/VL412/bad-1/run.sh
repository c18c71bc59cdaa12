#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.skip_dump_dir=/data/rollout_dump actor_rollout_ref.rollout.name=vllm
