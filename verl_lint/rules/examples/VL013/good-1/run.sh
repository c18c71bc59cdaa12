#!/bin/zsh
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm \
    trainer.logger='["console","wandb"]'
