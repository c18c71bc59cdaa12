#!/bin/bash
python3 -m verl.trainer.main_ppo trainer.use_v1=False actor_rollout_ref.rollout.name=vllm
