#!/bin/bash
sp_size=4
max_len=$(( 4096 / sp_size ))
