#!/bin/bash
python3 -m verl.trainer.main_ppo +data.train_batch_sizee=4 actor_rollout_ref.rollout.name=vllm
