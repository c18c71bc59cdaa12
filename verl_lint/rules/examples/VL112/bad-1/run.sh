#!/bin/bash
DYN=
python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.use_dynamic_bsz=$DYN actor_rollout_ref.rollout.name=vllm
