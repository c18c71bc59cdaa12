#!/bin/bash
python3 -m verl.trainer.main_ppo trainer.worker_nsight_options.kill=none actor_rollout_ref.rollout.name=vllm
