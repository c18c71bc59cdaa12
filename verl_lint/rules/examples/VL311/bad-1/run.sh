#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.enable_chunked_prefill=False actor_rollout_ref.rollout.max_model_len=16384 actor_rollout_ref.rollout.max_num_batched_tokens=8192 actor_rollout_ref.rollout.name=vllm
