"""The rule pack. Importing this package registers every rule in `engine.REGISTRY`.

Families (the hundreds of the code): 0xx script, 1xx Hydra and keys, 2xx ineffective
keys, 3xx sizes and parallelism, 4xx removed/renamed, 5xx environment, 6xx allocator,
7xx engine kwargs.
"""

from . import allocator, engine_kwargs, env, hydra_keys, script, sizes, tables  # noqa: F401
from . import unread, values  # noqa: F401
