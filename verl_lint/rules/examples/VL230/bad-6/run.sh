#!/bin/bash
# The optimizer is the actor's (and the critic's): the rollout never reads one.
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm \
    +actor_rollout_ref.rollout.optim.lr=2e-6
