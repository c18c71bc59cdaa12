#!/bin/bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm '+actor_rollout_ref.rollout.engine_kwargs.vllm.cuda_graph_sizes=[1,2,4]'
