#!/bin/bash
# GRPO launch with sizes that verl only rejects after Ray and the GPUs are up, and a typo.
NNODES=6
GPUS_PER_NODE=8

# Bug: sp_size is used before it is assigned (bash reads it as 0 -> division by zero).
max_token_len=$(( (2048 + 4096) * 2 / sp_size ))
sp_size=2

python3 -u -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files=/data/train.parquet \
    data.train_batch_size=1000 \
    actor_rollout_ref.model.path=/models/Qwen2.5-7B \
    actor_rollout_ref.actor.ppo_mini_batch_size=48 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.actor.ulysses_sequence_parallel_size=$sp_size \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.n=5 \
    actor_rollout_ref.rollout.tensor_parallel_size=2 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \
    trainer.n_gpus_per_node=$GPUS_PER_NODE \
    trainer.nnodes=$NNODES \
    trainer.total_epochs=10 2>&1 | tee grpo.log
