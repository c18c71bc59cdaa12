#!/bin/bash
python3 -m verl.trainer.main_ppo data.val_batch_size=16 actor_rollout_ref.rollout.name=vllm
