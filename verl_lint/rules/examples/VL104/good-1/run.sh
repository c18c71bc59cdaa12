#!/bin/bash
python3 -m verl.trainer.main_ppo '~trainer.val_before_train' actor_rollout_ref.rollout.name=vllm
