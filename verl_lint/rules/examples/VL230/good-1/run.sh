#!/bin/bash
python3 -m verl.trainer.main_ppo +trainer.no_such_knob=False actor_rollout_ref.rollout.name=vllm
