#!/bin/bash
python3 -m verl.trainer.main_ppo critic.fsdp.param_offload=True actor_rollout_ref.rollout.name=vllm
