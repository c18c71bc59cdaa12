#!/bin/bash
python3 -m verl.trainer.main_ppo reward.sandbox_fusion.url=http://sandbox:8080/run_code actor_rollout_ref.rollout.name=vllm
