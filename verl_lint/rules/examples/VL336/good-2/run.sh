#!/bin/bash
python3 -m verl.trainer.main_generation trainer.nnodes=4
