#!/bin/bash
python3 -m verl.trainer.main_ppo algorithm.rollout_is=True algorithm.rollout_is_level=sequence actor_rollout_ref.rollout.name=vllm
