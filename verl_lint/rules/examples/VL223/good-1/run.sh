#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.val_kwargs.temperature=0.6 actor_rollout_ref.rollout.val_kwargs.do_sample=True actor_rollout_ref.rollout.name=vllm
