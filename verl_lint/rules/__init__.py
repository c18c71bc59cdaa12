"""The rule pack: one module per family, each declaring its rules in the registry.

Families (the hundreds of the code): 0xx script, 1xx Hydra and keys, 2xx ineffective
keys, 3xx sizes and parallelism, 4xx removed/renamed, 5xx environment, 6xx allocator,
7xx engine kwargs. Importing `rules.pack` registers all of them; a front end imports only the
module declaring the rules it reports (`rules.script`, `rules.hydra_keys`).
"""
