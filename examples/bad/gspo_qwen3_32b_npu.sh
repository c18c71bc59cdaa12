#!/usr/bin/env bash
# GSPO on Qwen3-32B on Ascend NPU.
# Bug: an obsolete vLLM attention backend is exported (ignored by verl 0.9.1's vllm==0.24.0; fatal on 0.12-0.14).
set -euo pipefail

export VLLM_USE_V1=1
export VLLM_ATTENTION_BACKEND=XFORMERS
export TASK_QUEUE_ENABLE=1

MODEL_PATH=/data/models/Qwen3-32B
loss_mode=gspo

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files=/data/dapo/train.parquet \
    data.val_files=/data/dapo/test.parquet \
    data.train_batch_size=256 \
    actor_rollout_ref.model.path=$MODEL_PATH \
    actor_rollout_ref.actor.policy_loss.loss_mode=${loss_mode} \
    actor_rollout_ref.actor.ppo_mini_batch_size=64 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.n=8 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=8 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1 \
    trainer.device=npu \
    trainer.n_gpus_per_node=16 \
    trainer.nnodes=2
