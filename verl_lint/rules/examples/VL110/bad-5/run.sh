#!/bin/bash
python3 -m verl.trainer.main_ppo +actor_rollout_ref.rollout.multi_turn.max_turns=5 actor_rollout_ref.rollout.name=vllm
