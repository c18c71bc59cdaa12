#!/usr/bin/env bash
# GRPO on GSM8K with Qwen2.5-7B-Instruct: FSDP actor, vLLM rollout, one 8-GPU node.
set -xeuo pipefail

NNODES=${NNODES:-1}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
MODEL_PATH=${MODEL_PATH:-$HOME/models/Qwen2.5-7B-Instruct}
DATA_DIR=${DATA_DIR:-$HOME/data/gsm8k}

train_batch_size=512
n_resp=8
mini_batch=$((train_batch_size / 4))
max_prompt_length=1024
max_response_length=2048
rollout_tp=2

DATA=(
    data.train_files="$DATA_DIR/train.parquet"
    data.val_files="$DATA_DIR/test.parquet"
    data.train_batch_size=$train_batch_size
    data.max_prompt_length=$max_prompt_length
    data.max_response_length=$max_response_length
    data.filter_overlong_prompts=True
)

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    "${DATA[@]}" \
    actor_rollout_ref.model.path="$MODEL_PATH" \
    actor_rollout_ref.model.use_remove_padding=True \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=$mini_batch \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=16 \
    actor_rollout_ref.actor.use_kl_loss=True \
    actor_rollout_ref.actor.kl_loss_coef=0.001 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.n=$n_resp \
    actor_rollout_ref.rollout.tensor_model_parallel_size=$rollout_tp \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.6 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=32 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=32 \
    'trainer.logger=["console","wandb"]' \
    trainer.project_name=verl_grpo_gsm8k \
    trainer.experiment_name=qwen2_7b_grpo \
    trainer.n_gpus_per_node=$GPUS_PER_NODE \
    trainer.nnodes=$NNODES \
    trainer.total_epochs=15 "$@"
