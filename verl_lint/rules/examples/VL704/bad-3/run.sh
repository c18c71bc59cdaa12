#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=sglang +actor_rollout_ref.rollout.engine_kwargs.sglang.mem_fraction_static=0.8
