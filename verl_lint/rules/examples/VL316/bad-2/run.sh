#!/bin/bash
torchrun --standalone --nproc_per_node=8 -m verl.trainer.fsdp_sft_trainer data.train_batch_size=64 data.micro_batch_size_per_gpu=3
