#!/bin/bash
python3 -m verl.trainer.main_ppo critic.checkpoint.contents=[model,optimizer,extra] actor_rollout_ref.rollout.name=vllm
