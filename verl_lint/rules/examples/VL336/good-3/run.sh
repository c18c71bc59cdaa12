#!/bin/bash
python3 -m verl.trainer.main_generation trainer.n_gpus_per_node=2 rollout.tensor_model_parallel_size=2 data.batch_size=2
