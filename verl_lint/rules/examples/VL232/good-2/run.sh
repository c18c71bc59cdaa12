#!/bin/bash
python3 -m verl.trainer.main_ppo +actor_rollout_ref.actor.optim.grad_clip=null actor_rollout_ref.rollout.name=vllm
