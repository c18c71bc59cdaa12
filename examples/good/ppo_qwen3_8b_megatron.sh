#!/usr/bin/env bash
# PPO with a Megatron actor and critic (verl >= 0.9 selects Megatron with model_engine=megatron).
set -euo pipefail

NODES=2
GPUS=8
TP=4
PP=2
MODEL=/mnt/models/Qwen3-8B

COMMON=(
    actor_rollout_ref.model.path=$MODEL
    critic.model.path=$MODEL
    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=$TP
    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=$PP
    critic.megatron.tensor_model_parallel_size=$TP
    critic.megatron.pipeline_model_parallel_size=$PP
)

run_ppo() {
    python3 -m verl.trainer.main_ppo model_engine=megatron \
        data.train_files=/mnt/data/train.parquet \
        data.val_files=/mnt/data/val.parquet \
        data.train_batch_size=256 \
        "${COMMON[@]}" \
        actor_rollout_ref.actor.ppo_mini_batch_size=64 \
        actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \
        critic.ppo_micro_batch_size_per_gpu=2 \
        actor_rollout_ref.rollout.name=vllm \
        actor_rollout_ref.rollout.tensor_model_parallel_size=4 \
        actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \
        trainer.n_gpus_per_node=$GPUS \
        trainer.nnodes=$NODES \
        trainer.total_epochs=3 2>&1 | tee "ppo_megatron_$(date +%s).log"
}

run_ppo
