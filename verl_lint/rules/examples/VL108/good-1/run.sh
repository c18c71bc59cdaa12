#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-mean actor_rollout_ref.actor.optim.lr_scheduler_type=cosine actor_rollout_ref.rollout.name=vllm
