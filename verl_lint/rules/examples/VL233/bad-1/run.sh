#!/bin/bash
python3 -m verl.trainer.main_ppo algorithm.kl_ctrl.kl_coef=0.01 actor_rollout_ref.rollout.name=vllm
