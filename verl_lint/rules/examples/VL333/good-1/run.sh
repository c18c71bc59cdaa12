#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.ulysses_sequence_parallel_size=4 actor_rollout_ref.model.use_remove_padding=True trainer.n_gpus_per_node=8 actor_rollout_ref.rollout.name=vllm
