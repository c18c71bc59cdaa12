"""Importing this module registers every rule: the explicit, greppable list of the pack."""

from . import allocator, batch_sizes, engine_kwargs, env, hydra_keys, parallel_sizes, script, sizes, tables, unread, values  # noqa: F401
