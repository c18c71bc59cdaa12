python3 -m verl.trainer.fsdp_sft_trainer trainer.total_epochs=1
