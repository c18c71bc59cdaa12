#!/bin/bash
echo quick
