#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.tensor_parallel_size=2 actor_rollout_ref.rollout.name=vllm
