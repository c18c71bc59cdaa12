#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm trainer.nnodez=1  # verl-lint: disable=VL101
