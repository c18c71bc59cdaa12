"""Every fact about a rule is on its `Rule` (docs/ARCHITECTURE.md, "The rule protocol"): no rule
code is typed outside the modules that declare rules, and no two rules share a code."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import yaml

from verl_lint.catalogue import RETIRED
from verl_lint.engines.versions import ENGINES
from verl_lint.registry import Subject
from verl_lint.rules import registered_rules

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "verl_lint"
CODE = re.compile(r"\bVL\d{3}\b")
# Where rules are declared, and so where their codes are written: the rule pack and the catalogue.
DECLARING = ("rules/", "catalogue.py")
# The loader of the knowledge tables (rules/*.yaml, which declare rules of their own) quotes a
# record's code in its documentation and in the error a malformed code gets.
EXEMPT = {"knowledge.py", "table_records.py"}  # the tables' loader quotes a code in its errors


def code_literals(package: Path) -> list[str]:
    """`path:line: text` of every rule code written in a module outside the declaring ones, in
    code, strings, docstrings and comments alike."""
    out = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel.startswith(DECLARING) or rel in EXEMPT:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if CODE.search(line):
                out.append(f"{rel}:{n}: {line.strip()}")
    return out


def test_no_rule_code_outside_the_rules():
    """A front end asks the registry (`Rule.snippets`, `in_callback`, `engines`, `outcome`, ...) or
    names the catalogue's `Rule`; it never retypes a code."""
    assert code_literals(PACKAGE) == []


def test_the_scan_catches_a_code_in_code_and_in_comments(tmp_path):
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "x.py").write_text('CODE = "VL101"\n')  # declaring: allowed
    (tmp_path / "front.py").write_text('OPT = ("VL230",)\n# and VL231 in a comment\n"""VL232 in a docstring"""\n')
    (tmp_path / "other.py").write_text("VL23 = 'VL2301'  # not a code\n")
    assert code_literals(tmp_path) == [
        'front.py:1: OPT = ("VL230",)',
        "front.py:2: # and VL231 in a comment",
        'front.py:3: """VL232 in a docstring"""',
    ]


def declared_codes() -> list[tuple[str, str]]:
    """(code, where) of every rule declared in the source: `@rule(code, ...)` and
    `declare(code, ...)` in the rule pack and the catalogue, and each record of the knowledge
    tables, whether or not the module is imported."""
    out = []
    for path in sorted([*(PACKAGE / "rules").glob("*.py"), PACKAGE / "catalogue.py"]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("rule", "declare")
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                out.append((node.args[0].value, f"{path.name}:{node.lineno}"))
    for path in sorted((ROOT / "rules").glob("*.yaml")):
        table = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(table, dict) and "records" in table:  # a table of rules (env_vars.yaml only names codes)
            out += [(rec["code"], f"{path.name}:{rec['name']}") for rec in table["records"]]
    return out


def test_no_two_rules_share_a_code_and_no_retired_code_comes_back():
    declared = declared_codes()
    twice = {
        code: [w for c, w in declared if c == code] for code, n in Counter(c for c, _ in declared).items() if n > 1
    }
    assert twice == {}
    codes = {c for c, _ in declared}
    assert codes & set(RETIRED) == set()
    # every declared rule is registered once the pack is loaded (no module left out of rules/pack.py), and nothing else
    assert codes == {r.code for r in registered_rules()}


def test_the_facts_front_ends_read_are_well_formed():
    rules = list(registered_rules())
    for r in rules:
        assert set(r.engines) <= set(ENGINES), r.code
        assert r.outcome in ("", "launch", "file", "limit", "unparsed"), r.code
        # `catalogue.outcome` answers without the rule pack: only the catalogue's rules have one
        assert not r.outcome or r.check is None, r.code
    # each fact is set on some rule and left at its default on others: none is a dead field
    for fact in ("snippets", "in_callback", "engines", "size_check", "before_the_cut", "outcome", "live"):
        assert len({bool(getattr(r, fact)) for r in rules}) == 2, fact


def test_a_family_produces_its_members_findings_and_no_check_of_their_own():
    """The allocator, engine-kwargs and engine-env analyses each register once, as the producer
    of their members' codes (a finding of another code would be an assertion error at run time)."""
    rules = list(registered_rules())
    families = {r.producer for r in rules if r.producer is not None}
    assert {f.analyse.__module__.rsplit(".", 1)[1] for f in families} == {"allocator", "engine_kwargs_checks", "env"}
    for fam in families:
        assert sorted(fam.codes) == sorted(r.code for r in rules if r.producer is fam)


def test_a_subject_matches_keys_as_the_tables_write_them():
    s = Subject(("a.b", "c.d.*", "*.e"))
    assert s.match("a.b") == ""  # exact
    assert s.match("c.d.x.y") == "x.y"  # under a prefix: what the `.*` matched
    assert s.match("f.g.e") == ""  # a glob
    assert s.match("c.d") is None and s.match("c.dx.y") is None and s.match("a.b.c") is None
    assert Subject(("*.*",)).match("top") is None and Subject(("*.*",)).match("a.b") == ""  # a glob, not a prefix
    assert Subject().match("anything.at.all") == ""


def test_every_subject_matches_as_fnmatch_does():
    """`Subject.match` reads `*.name` as a suffix and `a.b.*` as a prefix instead of running fnmatch
    on every setting, and `Subject.matches` tests exact keys and `*` without it: on each registered
    subject and keys made from every pattern, the answer is fnmatch's (a prefix also says what its
    `.*` matched)."""
    import fnmatch

    def reference(subject: Subject, key: str) -> str | None:
        for p in subject.keys:
            if p.endswith(".*") and not re.search(r"[*?\[]", p[:-2]) and key.startswith(p[:-1]):
                return key[len(p) - 1 :]
        return "" if any(fnmatch.fnmatchcase(key, p) for p in subject.keys) else None

    subjects = {r.subject for r in registered_rules() if r.subject is not None}
    subjects |= {r.producer.subject for r in registered_rules() if r.producer and r.producer.subject}
    subjects.add(Subject(("a.b", "c.d.*", "*.e", "*", "*.*", "x.*.y", "*.f?")))
    words = {w.strip("*.?") for s in subjects for p in s.keys for w in [p, *p.split(".")]} - {""}
    keys = {k for w in words for k in (w, f"x.{w}", f"{w}.y", f"x{w}", f"{w}y", f".{w}", f"a.{w}.b", w[1:])}
    assert len(subjects) > 20 and len(keys) > 500
    subjects |= {Subject(("a.b", "c.d")), Subject(("*",)), Subject(("*", "a.b.*"))}  # each fast path of `matches`
    for s in subjects:
        for k in keys:
            assert s.match(k) == reference(s, k), (s.keys, k)
            assert s.matches(k) == (reference(s, k) is not None), (s.keys, k)


def test_no_rule_scans_the_settings_itself():
    """A rule names its subject (`Rule.subject`, `Family.subject`) and the core hands it the
    settings (`Context.settings_for`): no rule module reads the composition's settings or
    overrides, the project files' values, or whether a setting came from a file."""
    scans = re.compile(r"\.(settings|file_settings|overrides|in_file)\b")
    found = [
        f"{path.name}:{n}: {line.strip()}"
        for path in sorted((PACKAGE / "rules").glob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if scans.search(line) and "allocator.alloc_conf" not in line
    ]
    assert found == []
