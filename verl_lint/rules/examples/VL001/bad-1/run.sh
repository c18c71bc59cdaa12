#!/bin/bash
if [ -z "$X" ]; then
  echo "unterminated
