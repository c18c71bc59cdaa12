#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct data.max_prompt_length=4096 data.max_response_length=28672 actor_rollout_ref.rollout.max_num_batched_tokens=40960 actor_rollout_ref.rollout.name=vllm
