#!/bin/bash
python3 -m verl.trainer.main_ppo algorithm.rollout_correction.bypass_mode=True algorithm.rollout_correction.loss_type=ppo_clip actor_rollout_ref.rollout.calculate_log_probs=True actor_rollout_ref.rollout.name=vllm
