#!/bin/bash
python3 -m verl.trainer.main_ppo trainer.use_legacy_worker_impl=disable actor_rollout_ref.rollout.name=vllm
