#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.use_dynamic_bsz=True actor_rollout_ref.actor.ppo_max_token_len_per_gpu=16384 actor_rollout_ref.rollout.name=vllm
