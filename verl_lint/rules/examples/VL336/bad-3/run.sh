#!/bin/bash
# verl#473: TP 2 on 2 GPUs; the app pads to the data-parallel size (1), the dispatch splits over 2 workers
python3 -m verl.trainer.main_generation trainer.n_gpus_per_node=2 rollout.tensor_model_parallel_size=2 data.batch_size=1
