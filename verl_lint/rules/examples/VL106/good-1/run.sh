#!/bin/bash
python3 -m verl.trainer.main_ppo model_engine=torchtitan actor_rollout_ref.rollout.name=vllm
