#!/bin/bash
python3 -m verl.trainer.main_ppo ray_init.num_cpus=8 actor_rollout_ref.rollout.name=vllm
