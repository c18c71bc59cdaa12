#!/bin/bash
python3 -m verl.trainer.main_ppo global_profiler.global_tool_config.nsys.worker_nsight_options.kill=none actor_rollout_ref.rollout.name=vllm
