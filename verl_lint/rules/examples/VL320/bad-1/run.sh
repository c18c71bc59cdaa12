#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct actor_rollout_ref.rollout.tensor_model_parallel_size=8 actor_rollout_ref.rollout.name=vllm
