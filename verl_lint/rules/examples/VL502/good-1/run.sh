#!/bin/bash
export VLLM_WORKER_MULTIPROC_METHOD=spawn
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm +actor_rollout_ref.rollout.engine_kwargs.vllm.all2all_backend=deepep_low_latency
