#!/bin/bash
python3 -m verl.trainer.main_ppo model_engine=megatron actor_rollout_ref.actor.use_dynamic_bsz=True actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 actor_rollout_ref.rollout.name=vllm
