#!/bin/bash
python3 -m verl.trainer.main_ppo model_engine=megatron actor_rollout_ref.actor.megatron.tensor_model_parallel_size=1 actor_rollout_ref.actor.megatron.sequence_parallel=True actor_rollout_ref.rollout.name=vllm
