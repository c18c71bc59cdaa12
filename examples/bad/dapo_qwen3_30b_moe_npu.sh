#!/bin/bash
# DAPO on Qwen3-30B-A3B (MoE) on Ascend NPU: 2 nodes x 16 NPUs.
# Bug: expert parallelism is requested through vLLM's own flag, which verl overwrites.
set -x
export HCCL_CONNECT_TIMEOUT=1500
export HCCL_EXEC_TIMEOUT=3600

project_name='DAPO'
exp_name='DAPO-Qwen3-30B-A3B-npu'
NNODES=${NNODES:-2}
NPUS_PER_NODE=16
gen_tp=4
gen_dp=2

max_prompt_length=$((1024 * 2))
max_response_length=$((1024 * 20))
train_prompt_bsz=64
n_resp_per_prompt=16
train_prompt_mini_bsz=16
actor_ppo_max_token_len=$(((max_prompt_length + max_response_length) * 2))

python3 -m verl.trainer.main_ppo \
    data.train_files="$HOME/data/dapo-math-17k.parquet" \
    data.val_files="$HOME/data/aime-2024.parquet" \
    data.max_prompt_length=${max_prompt_length} \
    data.max_response_length=${max_response_length} \
    data.train_batch_size=${train_prompt_bsz} \
    algorithm.adv_estimator=grpo \
    actor_rollout_ref.model.path="$HOME/models/Qwen3-30B-A3B" \
    actor_rollout_ref.actor.ppo_mini_batch_size=${train_prompt_mini_bsz} \
    actor_rollout_ref.actor.use_dynamic_bsz=True \
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=${actor_ppo_max_token_len} \
    actor_rollout_ref.actor.ulysses_sequence_parallel_size=2 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.n=${n_resp_per_prompt} \
    actor_rollout_ref.rollout.tensor_model_parallel_size=${gen_tp} \
    actor_rollout_ref.rollout.data_parallel_size=${gen_dp} \
    +actor_rollout_ref.rollout.engine_kwargs.vllm.enable_expert_parallel=True \
    actor_rollout_ref.rollout.gpu_memory_utilization=0.8 \
    trainer.device=npu \
    trainer.project_name="${project_name}" \
    trainer.experiment_name="${exp_name}" \
    trainer.n_gpus_per_node=${NPUS_PER_NODE} \
    trainer.nnodes=${NNODES} \
    trainer.total_epochs=1 "$@"
