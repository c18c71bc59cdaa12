"""Golden CLI output: the rules' example fixtures (verl_lint/rules/examples/, see verl_lint/examples.py)
and the bundled examples/, each run through `verl-lint check` and compared byte for byte with
the output recorded beside it. scripts/regen_golden.py records it; tests/test_rule_examples.py
and tests/test_examples.py compare.

A fixture is linted as `run.sh` from a copy of its directory (so its findings say `run.sh:L:C`
and `config/x.yaml:L:C`), with `--verl VERSION` for each release it runs on, `--color never`
and its options. Its output on the first of those releases is `expected.txt`; a release whose
output differs has its own `expected-VERSION.txt`.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

from conftest import EXAMPLES, RELEASES

from verl_lint.cache import cache_dir
from verl_lint.cli import main
from verl_lint.examples import Example
from verl_lint.registry import Rule, parse_version
from verl_lint.rules import registered_rules

ROOT = Path(__file__).resolve().parent.parent
# A rule with examples for none of RELEASES (a record about the 0.6 line only) runs them on the
# first of these it has examples for, in the network tier.
OTHER_RELEASES = ("0.6.1", "0.2.0.post2")
# Examples that do not hold on verl 0.5.0 yet (reported on issue #19: examples without a version
# specifier, or the linter); no golden output is recorded for them there, and the test is a
# strict xfail, so a fix shows up as a failing XPASS and leaves this list.
FAIL_ON_0_5 = {
    "VL010/good-1:0.5.0",
    "VL106/bad-1:0.5.0",
    "VL106/good-1:0.5.0",
    "VL108/bad-2:0.5.0",
    "VL108/good-1:0.5.0",
    "VL110/bad-1:0.5.0",
    "VL110/bad-2:0.5.0",
    "VL231/bad-1:0.5.0",
    "VL501/bad-1:0.5.0",
    "VL501/bad-2:0.5.0",
    "VL503/good-1:0.5.0",
    "VL504/good-1:0.5.0",
    "VL608/bad-1:0.5.0",
    "VL610/bad-1:0.5.0",
}
# Fixtures no release at hand runs (its range excludes them, or their source lacks the rule's
# evidence): no output is recorded for them. None today: VL323's >=0.8 examples run since its
# evidence includes megatron-core's config reading (the engine workers), not only 0.7's workers.
NEVER_RUN: set[str] = set()
FIXTURE_FILES = {"run.sh", "config", "verl", "options", "note", "expected.txt"}  # and expected-VERSION.txt


def fixtures() -> list[tuple[Rule, Example]]:
    return [(r, ex) for r in registered_rules() for ex in (*r.bad, *r.good)]


def _holds(r: Rule, ex: Example, version: str) -> bool:
    v = parse_version(version)
    return r.applies_to(v) and ex in r.examples(ex.kind, v)


def releases_of(r: Rule, ex: Example) -> list[str]:
    """The releases the fixture runs on (the rule's own range and evidence aside: a release whose
    source lacks what the rule mirrors is skipped when its tree is at hand)."""
    found = [v for v in RELEASES if _holds(r, ex, v)]
    if found or any(r.examples(k, parse_version(v)) for k in ("bad", "good") for v in RELEASES):
        return found
    other = next(
        (v for v in OTHER_RELEASES if r.examples("bad", parse_version(v)) or r.examples("good", parse_version(v))), None
    )
    return [other] if other and _holds(r, ex, other) else []


def case_id(ex: Example, version: str) -> str:
    return f"{ex.name}:{version}"


def expected_file(ex: Example, version: str) -> Path:
    own = ex.path / f"expected-{version}.txt"
    return own if own.is_file() else ex.path / "expected.txt"


def portable(text: str) -> str:
    """Output as recorded: the cache directory (where verl's own files are, in some notes) named
    `<cache>`, not by this session's private path."""
    return text.replace(str(cache_dir()), "<cache>")


def cli(args: list[str], cwd: Path) -> tuple[int, str]:
    """`verl-lint ARGS` in this process, from `cwd`: (exit code, stdout as recorded)."""
    out, err, here = io.StringIO(), io.StringIO(), os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(args)
    finally:
        os.chdir(here)
    return rc, portable(out.getvalue())


def run_fixture(ex: Example, version: str, *extra: str) -> tuple[int, str, list[dict], dict[str, str]]:
    """Lint a copy of the fixture on `version` (with `extra` flags): (exit code, text output, JSON
    findings, its files)."""
    with tempfile.TemporaryDirectory(prefix="verl-lint-example-") as tmp:
        work, report = Path(tmp) / "example", Path(tmp) / "report.json"
        files = {}
        for name, data in ex.files():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            (work / name).write_bytes(data)
            files[name] = data.decode("utf-8", "surrogateescape")
        args = ["check", "--verl", version, "--color", "never", *ex.options, *extra]
        rc, text = cli([*args, "--output-format", "json", "--output", str(report), "run.sh"], work)
        *found, _summary = json.loads(report.read_text(encoding="utf-8"))
    return rc, text, found, files


# What a finding points at when the script does not spell its key there (a regex, first match).
ANCHORS = {
    "VL001": r"(?m)^if ",  # the statement bash cannot parse
    "VL003": r"# verl-lint: disable",  # the suppression comment
    "VL004": r"\A",  # the whole file
    "VL005": r"\A",  # the whole file
    "VL006": "[\udc80-\udcff]",  # the first byte that is not UTF-8 (read with surrogateescape)
    "VL007": r"--config-path=\S*\$|\"python3",  # the word only known at run time
    "VL010": r"verl\.trainer\.main_ppo",  # the launch whose engine version is unknown
    "VL109": r"verl\.trainer\.main_ppo",  # the launch that leaves a mandatory value unset
    # the launch that leaves a micro batch size unset, or the global size the engine workers do not read
    "VL315": r"verl\.trainer\.main_ppo(?!.*rollout\.log_prob_micro_batch_size=)|(?<=\s)actor_rollout_ref\.rollout\.log_prob_micro_batch_size=",
    "VL011": r"\$\{?[a-z_]",  # the `$x` the script never assigns
}


def expected_position(text: str, code: str, key: str, yaml: bool = False) -> tuple[int, int] | None:
    """(line, col) of what a finding of `code` about `key` points at in a fixture's file: the
    anchor of `code`, else the start of the first word that names `key` (in a YAML file: the
    first line setting `key`'s last part)."""
    if code in ANCHORS and not yaml:
        m = re.search(ANCHORS[code], text)
        start = m.start() if m else None
    elif yaml:
        m = re.search(r"(?m)^\s*(?:- )?(" + re.escape(key.rsplit(".", 1)[-1]) + r"):", text) if key else None
        start = m.start(1) if m else None
    else:
        m = re.search(r"(?<![\w.])" + re.escape(key) + r"(?![\w.])", text) if key else None
        start = max(text.rfind(c, 0, m.start()) for c in " \t\n") + 1 if m else None
    if start is None:
        return None
    return text.count("\n", 0, start) + 1, start - (text.rfind("\n", 0, start) + 1) + 1


def problems(r: Rule, ex: Example, version: str, rc: int, found: list[dict], files: dict[str, str]) -> list[str]:
    """What is wrong with a fixture's run: an input error; a bad example giving anything but its
    rule, or at another place than the one its script names; a good example giving anything."""
    if rc == 2:
        return [f"{ex.name} on verl {version}: exit code 2 (an input error)"]
    got = sorted({f["code"] for f in found})
    if ex.kind == "good":
        return [f"{ex.name} on verl {version} gave {[(f['code'], f['message']) for f in found]}"] if found else []
    if got != [r.code]:
        return [f"{ex.name} on verl {version} gave {got}: {[f['message'] for f in found]}"]
    out = []
    for f in found:
        text = files.get(f["path"])
        where = expected_position(text, f["code"], f["key"], f["path"].endswith((".yaml", ".yml"))) if text else None
        if where is None:
            out.append(f"{ex.name} on verl {version}: nothing in {f['path']} names {f['key']!r}")
        elif (f["line"], f["column"]) != where:
            out.append(
                f"{ex.name} on verl {version} at {f['line']}:{f['column']}, expected {where[0]}:{where[1]}: {f['message']}"
            )
    return out


# ------------------------------------------------------------- examples/ ----

FORMATS = {"text": "text.txt", "json": "json.json", "sarif": "sarif.json", "github": "github.txt"}
GOLDEN = EXAMPLES / "expected"


def run_examples(fmt: str, argv0: list[str] | None = None) -> tuple[int, str]:
    """`verl-lint check examples/ --output-format FMT` from the repository root, as README says
    (the repository's [tool.verl-lint] pins verl 0.9.1): in this process, or with `argv0` (the
    command that starts verl-lint) in a subprocess."""
    args = ["check", "examples/", "--output-format", fmt, "--color", "never", "-j", "1"]
    if argv0 is None:
        return cli(args, ROOT)
    r = subprocess.run([*argv0, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    return r.returncode, portable(r.stdout)
