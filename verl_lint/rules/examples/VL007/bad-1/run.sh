#!/bin/bash
CONFIG_DIR=$(find_config_dir)
python3 -m verl.trainer.main_ppo --config-path="$CONFIG_DIR" actor_rollout_ref.rollout.name=vllm trainer.nnodes=1
