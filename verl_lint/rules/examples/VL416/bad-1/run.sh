#!/bin/bash
python3 -m verl.trainer.main_ppo reward_model.micro_batch_size_per_gpu=8 actor_rollout_ref.rollout.name=vllm
