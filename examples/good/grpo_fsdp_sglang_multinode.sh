#!/bin/bash
# GRPO with an SGLang rollout across 4 nodes, submitted as a Ray job.
NNODES=4
N_GPUS_PER_NODE=8
WORLD=$((NNODES * N_GPUS_PER_NODE))
TRAIN_BS=$((WORLD * 8))

ray job submit --address="http://127.0.0.1:8265" --no-wait -- \
    python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files=/data/math/train.parquet \
    data.val_files=/data/math/test.parquet \
    data.train_batch_size=$TRAIN_BS \
    data.max_prompt_length=2048 \
    data.max_response_length=8192 \
    actor_rollout_ref.model.path=/models/Qwen2.5-32B \
    actor_rollout_ref.actor.ppo_mini_batch_size=64 \
    actor_rollout_ref.actor.use_dynamic_bsz=True \
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=20480 \
    actor_rollout_ref.actor.fsdp_config.ulysses_sequence_parallel_size=2 \
    actor_rollout_ref.rollout.name=sglang \
    actor_rollout_ref.rollout.n=16 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=8 \
    trainer.n_gpus_per_node=$N_GPUS_PER_NODE \
    trainer.nnodes=$NNODES
