#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct actor_rollout_ref.actor.fsdp_config.ulysses_sequence_parallel_size=4 actor_rollout_ref.model.use_remove_padding=True actor_rollout_ref.rollout.name=vllm
