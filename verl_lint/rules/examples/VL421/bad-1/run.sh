#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.checkpoint.contents=[model,optimizer,extra,hf_model] actor_rollout_ref.rollout.name=vllm
