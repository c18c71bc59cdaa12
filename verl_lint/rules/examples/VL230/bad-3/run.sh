#!/bin/bash
python3 -m verl.trainer.main_ppo +trainer.val_before_trian=False actor_rollout_ref.rollout.name=vllm
