python3 -m verl.trainer.main_generation_server trainer.n_gpus_per_node=8 actor_rollout_ref.rollout.name=vllm
