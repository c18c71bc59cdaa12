#!/bin/bash
# verl 0.7+ builds the critic into FSDPCriticConfig, whose FSDP section is `fsdp`.
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm \
    +critic.fsdp_config.param_offload=True
