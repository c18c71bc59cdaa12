#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm \
    trainer.nnodes=1 \
# a comment ends the command
    trainer.n_gpus_per_node=8
