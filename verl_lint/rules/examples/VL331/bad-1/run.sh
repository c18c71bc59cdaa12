#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 algorithm.adv_estimator=grpo actor_rollout_ref.actor.use_dynamic_bsz=True actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=False actor_rollout_ref.actor.ppo_max_token_len_per_gpu=8192 actor_rollout_ref.rollout.name=vllm
