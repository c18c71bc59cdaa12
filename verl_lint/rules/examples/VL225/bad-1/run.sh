#!/bin/bash
python3 -m verl.trainer.main_ppo algorithm.rollout_correction.bypass_mode=True algorithm.rollout_correction.rollout_is=token actor_rollout_ref.rollout.name=vllm
