#!/bin/bash
python3 -m verl.trainer.main_ppo trainer.nnodes=2 trainer.project_name=p actor_rollout_ref.rollout.name=vllm
