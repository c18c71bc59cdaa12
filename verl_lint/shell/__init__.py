"""Shell stage: parse bash with tree-sitter-bash and follow its values statically (nothing runs)."""

from .evaluator import evaluate
from .source import Source
from .values import Command, env_of

__all__ = ["Command", "Source", "env_of", "evaluate"]
