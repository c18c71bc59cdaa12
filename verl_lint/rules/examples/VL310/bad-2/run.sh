#!/bin/bash
# verl-lint: disable=VL232
python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.ulysses_sequence_parallel_size=2 actor_rollout_ref.model.use_remove_padding=False actor_rollout_ref.rollout.name=vllm
