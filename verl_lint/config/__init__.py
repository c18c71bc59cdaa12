"""Config stage: compose the launch's config with Hydra, know who set each value, and what verl's code reads."""
