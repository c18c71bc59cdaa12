#!/bin/zsh
# zsh expands the unquoted brackets as a file pattern.
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm \
    trainer.logger=['console','wandb']
