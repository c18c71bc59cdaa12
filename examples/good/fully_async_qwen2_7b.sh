#!/bin/bash
# Fully-async PPO: the rollouter and the trainer run on separate GPU pools.
set -x
rollout_gpus=4
train_gpus=4

python3 -m verl.experimental.fully_async_policy.fully_async_main \
    data.train_files=$HOME/data/gsm8k/train.parquet \
    data.val_files=$HOME/data/gsm8k/test.parquet \
    data.train_batch_size=0 \
    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \
    actor_rollout_ref.actor.ppo_mini_batch_size=32 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.mode=async \
    actor_rollout_ref.rollout.n=4 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.hybrid_engine=False \
    async_training.staleness_threshold=0.5 \
    async_training.trigger_parameter_sync_step=4 \
    trainer.nnodes=1 \
    trainer.n_gpus_per_node=$train_gpus \
    rollout.nnodes=1 \
    rollout.n_gpus_per_node=$rollout_gpus
