#!/bin/bash
python3 -m verl.trainer.main_generation trainer.n_gpus_per_node=8 data.batch_size=4
