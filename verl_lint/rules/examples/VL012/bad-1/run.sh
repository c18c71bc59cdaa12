#!/bin/bash
python3 -m verl.experimental.one_step_off_policy.main_ppo actor_rollout_ref.rollout.name=vllm actor_rollout_ref.actor.grad_clip=0.5
