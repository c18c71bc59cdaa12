#!/bin/bash
python3 -m verl.trainer.main_ppo 'global_profiler.global_tool_config.torch_memory.kw_args={}' actor_rollout_ref.rollout.name=vllm
