#!/bin/bash
# café
