"""The rule pack: one module per family, each declaring its rules in the registry.

Families (the hundreds of the code): 0xx script, 1xx Hydra and keys, 2xx ineffective
keys, 3xx sizes and parallelism, 4xx removed/renamed, 5xx environment, 6xx allocator,
7xx engine kwargs. Importing `rules.pack` registers all of them; the rules the front ends
report are declared below the stages, in `verl_lint/catalogue.py`.
"""

from ..registry import REGISTRY, Registry


def registered_rules() -> Registry:
    """The registry, with the rule pack registered in it."""
    from . import pack  # noqa: F401 - heavy (OmegaConf): only what lists or names rules needs the pack

    return REGISTRY
