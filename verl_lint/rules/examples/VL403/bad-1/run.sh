#!/bin/bash
python3 -m verl.trainer.main_ppo trainer.profile_steps=[1,2] actor_rollout_ref.rollout.name=vllm
