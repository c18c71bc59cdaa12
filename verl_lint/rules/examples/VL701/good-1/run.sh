#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm +actor_rollout_ref.rollout.engine_kwargs.vllm.swap_space=null +actor_rollout_ref.rollout.engine_kwargs.vllm.kv_cache_dtype=fp8
