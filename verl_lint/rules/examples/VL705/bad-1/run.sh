#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=sglang +actor_rollout_ref.rollout.engine_kwargs.vllm.max_num_seqs=256
