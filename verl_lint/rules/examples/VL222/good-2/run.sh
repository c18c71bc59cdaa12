#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.use_kl_loss=False actor_rollout_ref.ref.fsdp_config.param_offload=False actor_rollout_ref.rollout.name=vllm
