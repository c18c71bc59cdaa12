#!/bin/bash
# bash passes a pattern that matches no file on as written.
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm \
    trainer.logger=['console','wandb']
