#!/bin/bash
python3 -m verl.trainer.main_ppo ray_init.timeline_json_file=/tmp/timeline.json actor_rollout_ref.rollout.name=vllm
