#!/bin/bash
python3 -m verl.trainer.main_ppo data.val_batch_size=null actor_rollout_ref.rollout.name=vllm
