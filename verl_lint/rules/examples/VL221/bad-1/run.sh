#!/bin/bash
python3 -m verl.trainer.main_ppo skip.rollout.enable=True actor_rollout_ref.rollout.name=vllm
