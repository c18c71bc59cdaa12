#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.model.lora_rank=32 'actor_rollout_ref.model.exclude_modules='"'"'.*visual.*'"'"'' actor_rollout_ref.rollout.name=vllm
