#!/bin/bash
python3 -m verl.trainer.main_ppo data.max_prompt_length=2048 data.max_response_length=8192 actor_rollout_ref.rollout.name=vllm
