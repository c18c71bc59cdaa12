#!/bin/bash
python3 -m verl.trainer.main_ppo trainer.experiment_name= actor_rollout_ref.rollout.name=vllm
