#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.val_kwargs.do_sample=True actor_rollout_ref.rollout.temperature=0 actor_rollout_ref.rollout.name=vllm
