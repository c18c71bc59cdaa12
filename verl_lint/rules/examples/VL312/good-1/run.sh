#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.max_model_len=4096 data.max_prompt_length=1024 data.max_response_length=2048 actor_rollout_ref.rollout.name=vllm
