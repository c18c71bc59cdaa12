#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=my-org/my-private-model actor_rollout_ref.rollout.name=vllm
