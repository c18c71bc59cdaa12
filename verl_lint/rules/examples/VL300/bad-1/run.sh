python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm data.train_batch_size=$(cat bsz.txt) actor_rollout_ref.actor.ppo_mini_batch_size=128
