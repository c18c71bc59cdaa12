#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=sglang +actor_rollout_ref.rollout.engine_kwargs.sglang.enable_return_routed_experts=True actor_rollout_ref.rollout.enable_rollout_routing_replay=True
