"""A plugin that registers a rule which raises, through the public registry (fail-open tests)."""

from verl_lint.model import Severity
from verl_lint.registry import REGISTRY, Rule
from verl_lint.rules import pack  # noqa: F401 - registers the rule pack


def _boom(ctx):
    raise RuntimeError("boom rule exploded")


if REGISTRY.get("VL999") is None:
    REGISTRY.register(Rule("VL999", "boom", Severity.ERROR, "A rule that raises (test plugin).", _boom))
