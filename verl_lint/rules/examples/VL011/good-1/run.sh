#!/bin/bash
project=gsm8k
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm trainer.project_name=$project
