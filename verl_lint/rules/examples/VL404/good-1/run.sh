#!/bin/bash
python3 -m verl.trainer.main_ppo global_profiler.global_tool_config.nsys.controller_nsight_options.trace=cuda actor_rollout_ref.rollout.name=vllm
