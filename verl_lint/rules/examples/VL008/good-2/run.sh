#!/bin/bash
MODEL=Qwen/Qwen2.5-7B
evalplus.codegen --model $MODEL --greedy
LOG=/tmp/$MODEL.log
