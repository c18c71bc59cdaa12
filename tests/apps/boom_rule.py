"""A plugin that registers a rule which raises, through the public registry (fail-open tests)."""

from verl_lint import rules as _rules  # noqa: F401 - the rule pack first, as in a real run
from verl_lint.engine import REGISTRY, Rule
from verl_lint.model import Severity


def _boom(ctx):
    raise RuntimeError("boom rule exploded")


if REGISTRY.get("VL999") is None:
    REGISTRY.register(Rule("VL999", "boom", Severity.ERROR, "A rule that raises (test plugin).", _boom))
