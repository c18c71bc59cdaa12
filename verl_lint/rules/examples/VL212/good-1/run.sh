#!/bin/bash
python3 -m verl.trainer.main_ppo +critic.ppo_infer_max_token_len_per_gpu=8192 actor_rollout_ref.rollout.name=vllm
