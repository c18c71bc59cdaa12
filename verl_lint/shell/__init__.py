"""Shell stage: parse bash with tree-sitter-bash and follow its values statically (nothing runs)."""

from .evaluator import Command, ScriptResult, Source, bash_accepts, env_of, evaluate, parser, unknown_word

__all__ = ["Command", "ScriptResult", "Source", "bash_accepts", "env_of", "evaluate", "parser", "unknown_word"]
