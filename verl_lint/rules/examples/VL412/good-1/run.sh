#!/bin/bash
python3 -m verl.trainer.main_ppo skip.rollout_tq.dump_dir=/data/rollout_dump actor_rollout_ref.rollout.name=vllm
