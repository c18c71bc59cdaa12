#!/bin/bash
python3 -m verl.trainer.main_ppo reward.reward_model.enable=True reward.reward_model.model_path=/models/rm reward.reward_model.rollout.name=vllm reward.reward_model.rollout.tensor_model_parallel_size=2 actor_rollout_ref.rollout.name=vllm
