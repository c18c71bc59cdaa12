"""Importing this module registers every rule: the explicit, greppable list of the pack."""

from . import allocator, allocator_live, engine_kwargs, env, hydra_keys, script, sizes, tables, unread, values  # noqa: F401
