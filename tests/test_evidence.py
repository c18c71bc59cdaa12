"""A rule's evidence has one form (`evidence.Evidence`, a module constant), and its page lists all
of it: what gates the rule and what its check reads in verl's source to decide what it judges."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from verl_lint.evidence import Evidence
from verl_lint.rules import parallel_sizes, registered_rules, rejected_values, roles

RULES = Path(__file__).resolve().parent.parent / "verl_lint" / "rules"


def test_a_rule_page_lists_the_evidence_its_check_reads():
    vl306 = registered_rules().get("VL306")
    assert vl306.consults == (
        ("WORLD_ALL", parallel_sizes.WORLD_ALL),
        ("WORLD_TP", parallel_sizes.WORLD_TP),
        ("REPLICA", parallel_sizes.REPLICA),
    )
    page = vl306.page()
    assert f"- `/{parallel_sizes.REPLICA.pattern}/` in verl/workers/rollout/replica.py (REPLICA)" in page
    assert not {ev for _, ev in vl306.consults} & set(vl306.evidence)  # a gate is said once, as a gate


def test_evidence_read_through_helpers_of_other_rule_modules_is_found():
    """VL302 reads whether a critic runs through roles.py's helper, and a helper's lru_cache."""
    names = [n for n, _ in registered_rules().get("VL302").consults]
    assert {"NEED_CRITIC", "GAE_CRITIC"} <= set(names) and roles.NEED_CRITIC.pattern
    assert ("REGISTRY_EXTENDED", rejected_values.REGISTRY_EXTENDED) in registered_rules().get("VL111").consults


def _module_evidence(tree: ast.Module) -> set[str]:
    return {
        t.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name) and "Evidence(" in ast.unparse(node.value)
    }


def test_every_evidence_a_rule_body_reads_is_a_named_constant_on_a_page():
    """No `Evidence(...)` is built inside a function (it would be invisible to `consulted`), and
    every constant a `verl_has` / `tree_has` call names is on some rule's page."""
    on_pages = {ev for r in registered_rules() for ev in (*r.evidence, *r.unless, *(e for _, e in r.consults))}
    called: list[tuple[str, str]] = []
    for path in sorted(RULES.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        constants = _module_evidence(tree)
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in (n for stmt in fn.body for n in ast.walk(stmt)):
                if isinstance(node, ast.Call) and ast.unparse(node.func) == "Evidence":
                    raise AssertionError(f"{path.name}:{node.lineno}: Evidence built in {fn.name}: make it a constant")
                if isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] in ("verl_has", "tree_has"):
                    names = {n.id for a in node.args for n in ast.walk(a) if isinstance(n, ast.Name)}
                    called += [(path.stem, n) for n in names & constants]
    assert len(called) >= 20  # the calls of the rule bodies, found
    module = {m: sys.modules[f"verl_lint.rules.{m}"] for m, _ in called}
    for m, name in called:
        value = getattr(module[m], name)
        evs = [value] if isinstance(value, Evidence) else [e for v in value.values() for e in v]
        assert set(evs) <= on_pages, f"rules/{m}.py: {name} is read by a check but on no rule's page"


def test_reading_a_rule_page_loads_no_lazy_module():
    """`consulted` reads code objects: the engine schemas a rule module loads lazily stay unloaded."""
    code = (
        "import sys; from verl_lint.rules import registered_rules\n"
        "pages = [r.page() for r in registered_rules()]\n"
        "print(type(sys.modules['verl_lint.engines.schemas']).__name__)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "_LazyModule"
