#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm +actor_rollout_ref.rollout.engine_kwargs.vllm.max_num_batch_tokens=8192
