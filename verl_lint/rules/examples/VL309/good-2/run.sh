python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer actor_rollout_ref.rollout.name=vllm actor_rollout_ref.actor.megatron.tensor_model_parallel_size=4
