#!/bin/bash
python3 -m verl.trainer.main_ppo model_engine=no_such_engine actor_rollout_ref.rollout.name=vllm
