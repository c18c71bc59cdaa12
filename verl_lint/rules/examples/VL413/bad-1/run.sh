#!/bin/bash
python3 -m verl.trainer.main_ppo critic.model.fsdp_config.param_offload=True actor_rollout_ref.rollout.name=vllm
