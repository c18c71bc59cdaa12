#!/bin/bash
python3 -m verl.trainer.main_ppo +actor_rollout_ref.model.override_config.attention_dropout=0.0 actor_rollout_ref.rollout.name=vllm
