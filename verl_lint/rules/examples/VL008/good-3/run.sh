#!/bin/bash
LOG_DIR=/tmp/logs
RUN=grpo
LOG_FILE=$LOG_DIR/$RUN.log
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm trainer.nnodes=1
