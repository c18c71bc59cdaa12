#!/bin/bash
python3 -m verl.trainer.main_ppo global_profiler.tool=nsys 'global_profiler.steps=[1,2]' actor_rollout_ref.rollout.name=vllm
