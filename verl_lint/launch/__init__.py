"""Launch stage: recognise verl launches among a script's commands and find the verl tree and Hydra app they run."""
