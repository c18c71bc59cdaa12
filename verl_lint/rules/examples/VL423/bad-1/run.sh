#!/bin/bash
python3 -m verl.trainer.main_ppo data.sampler.class_path=/data/curriculum.py data.sampler.class_name=MySampler actor_rollout_ref.rollout.name=vllm
