#!/bin/bash
python3 -m verl.trainer.main_ppo ++actor_rollout_ref.rollout.engine_kwargs.vllm.block_size=16 actor_rollout_ref.rollout.name=vllm
