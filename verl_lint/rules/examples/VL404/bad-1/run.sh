#!/bin/bash
python3 -m verl.trainer.main_ppo trainer.controller_nsight_options.trace=cuda actor_rollout_ref.rollout.name=vllm
