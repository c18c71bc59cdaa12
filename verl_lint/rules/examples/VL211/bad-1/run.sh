#!/bin/bash
python3 -m verl.trainer.main_ppo critic.forward_micro_batch_size_per_gpu=4 actor_rollout_ref.rollout.name=vllm
