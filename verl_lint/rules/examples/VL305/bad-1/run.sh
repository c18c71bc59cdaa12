#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.use_dynamic_bsz=True actor_rollout_ref.actor.ppo_max_token_len_per_gpu=4096 data.max_prompt_length=2048 data.max_response_length=4096 actor_rollout_ref.rollout.name=vllm
