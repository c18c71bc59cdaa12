python3 -m verl.trainer.sft_trainer trainer.total_epochs=1
