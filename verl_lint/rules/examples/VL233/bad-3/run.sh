#!/bin/bash
python3 -m verl.trainer.main_ppo --config-path=$(pwd)/config --config-name=my_grpo
