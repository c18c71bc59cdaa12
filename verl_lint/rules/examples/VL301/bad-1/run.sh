#!/bin/bash
python3 -m verl.trainer.main_ppo data.train_batch_size=1000 actor_rollout_ref.rollout.n=5 trainer.n_gpus_per_node=8 trainer.nnodes=6 actor_rollout_ref.actor.ppo_mini_batch_size=48 actor_rollout_ref.rollout.name=vllm
