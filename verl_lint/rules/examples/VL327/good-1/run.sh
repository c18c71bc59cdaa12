#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen2.5-32B-Instruct trainer.n_gpus_per_node=8 trainer.nnodes=2 actor_rollout_ref.actor.use_kl_loss=True actor_rollout_ref.rollout.name=vllm
