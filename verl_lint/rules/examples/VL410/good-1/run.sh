#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes=1024 actor_rollout_ref.rollout.name=vllm
