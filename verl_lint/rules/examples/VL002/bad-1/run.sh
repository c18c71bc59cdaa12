#!/bin/bash
max_len=$(( 4096 / sp_size ))
sp_size=4
