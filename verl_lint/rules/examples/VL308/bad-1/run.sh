#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.pipeline_model_parallel_size=2
