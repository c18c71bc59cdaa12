#!/bin/bash
python3 -m verl.trainer.main_ppo 'trainer.logger=[console,wandb]' actor_rollout_ref.rollout.name=vllm
