#!/bin/bash
echo small
