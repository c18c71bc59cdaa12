"""The oracle tier (`-m oracle`): verl's own validation as ground truth for the size rules.

For each release, an environment of its own (the verl wheel without dependencies, torch CPU, and
only what verl's config and trainer modules import: no engines, no GPU libraries), cached in the
shared test cache by verl version. The seeded generator (oracle_launches.py) writes launches;
verl's own code judges each composed config (oracle_judge.py: Hydra's composition, validate_config,
the config dataclasses, and the worker checks that are arithmetic on the config, evaluated from
verl's source: `ORACLE_CHECKS` below lists them with file and line); verl-lint lints the same
launches written as scripts. The test asserts that verl-lint reports no error on a launch verl
accepts, and catches every launch verl rejects but those listed in KNOWN_MISSES (each with why),
printing every disagreement with its class.
"""

from __future__ import annotations

import json
import subprocess
import venv
from collections import Counter
from pathlib import Path

import pytest
from conftest import SHARED_CACHE, cached_release
from oracle_launches import launches, overrides, script

from verl_lint.model import Severity
from verl_lint.runner import lint_file
from verl_lint.runs import Options

pytestmark = pytest.mark.oracle

SEED, COUNT = 20261207, 300
RELEASES = ("0.9.1", "0.7.1")
HERE = Path(__file__).resolve().parent
# What verl's config and trainer modules import to validate (with verl's own version specifiers
# where its wheel declares the package), besides torch, pinned to the CPU build.
VALIDATION_IMPORTS = (
    "codetiming",
    "datasets",
    "hydra-core",
    "numpy",
    "ray",
    "tensordict",
    "transformers",
    "orjson",
    "pillow",
)
TORCH = "torch==2.13.0"
# (release, the oracle's check) -> why verl-lint does not report it.
KNOWN_MISSES: dict[tuple[str, str], str] = {}


def _pip(python: Path, *args: str) -> None:
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *args], check=True)


def oracle_env(version: str) -> Path:
    """The python of the oracle environment of verl `version`, built on first use."""
    root = SHARED_CACHE / "oracle" / f"verl-{version}"
    python = root / "bin" / "python"
    if (root / "ready").exists():
        return python
    venv.create(root, with_pip=True, clear=True)
    _pip(python, "--no-deps", f"verl=={version}")
    declared = subprocess.run(
        [
            str(python),
            "-c",
            "import importlib.metadata as m; print('\\n'.join(r for r in m.requires('verl') if 'extra ==' not in r))",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\n")
    wanted = []
    for name in VALIDATION_IMPORTS:
        spec = next(
            (
                r.replace("ray[default]", "ray")
                for r in declared
                if r.split("[")[0].split(">")[0].split("<")[0].split("=")[0].split("!")[0].strip() == name
            ),
            name,
        )
        wanted.append(spec)
    _pip(python, TORCH, *wanted)
    (root / "ready").write_text(" ".join([TORCH, *wanted]) + "\n")
    return python


def verl_verdicts(version: str, generated: list[dict], workdir: Path) -> dict:
    request = {
        "workdir": str(workdir),
        "launches": [{"id": g["id"], "overrides": overrides(g["settings"])} for g in generated],
    }
    done = subprocess.run(
        [str(oracle_env(version)), str(HERE / "oracle_judge.py")],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def lint_errors(version: str, generated: list[dict], composer, workdir: Path) -> dict[int, list[str]]:
    options = Options(verl_tree=cached_release(version))
    errors = {}
    for g in generated:
        path = workdir / f"launch_{g['id']}.sh"
        path.write_text(script(g["settings"]))
        report = lint_file(path, options, composer)
        assert not report.errors, report.errors
        errors[g["id"]] = [f"{d.code} {d.message}" for d in report.diagnostics if d.severity >= Severity.ERROR]
    return errors


@pytest.mark.parametrize("version", RELEASES)
def test_verl_lint_agrees_with_verls_own_validation(version, composer, tmp_path):
    if cached_release(version) is None:
        pytest.skip(f"verl {version} is not in the test cache (python -m pytest -m network tests/test_tiers.py)")
    generated = launches(SEED, COUNT)
    oracle = verl_verdicts(version, generated, tmp_path)
    assert oracle["version"] == version
    print(f"\nverl {version}: worker checks evaluated from verl's source (no process groups on CPU):")
    for check in oracle["checks"]:
        print(f"  {check['name']:28} {check['stage']:22} {check['where']}")
    found = lint_errors(version, generated, composer, tmp_path)
    verdict = {v["id"]: v for v in oracle["verdicts"]}
    false_errors, misses, known = [], [], []
    for g in generated:
        v, errors = verdict[g["id"]], found[g["id"]]
        what = f"launch {g['id']} (faults: {', '.join(g['faults']) or 'none'})"
        if v["stage"] is None and errors:
            false_errors.append(f"{what}: verl accepts it, verl-lint says {errors}")
        elif v["stage"] is not None and not errors:
            line = f"[{v['stage']}: {v['check']}] {what}: {v['message']}"
            (known if (version, v["check"]) in KNOWN_MISSES else misses).append(line)
    rejected = sum(v["stage"] is not None for v in oracle["verdicts"])
    caught = rejected - len(misses) - len(known)
    print(
        f"verl {version}: {rejected} of {COUNT} launches rejected ({dict(Counter(v['stage'] for v in oracle['verdicts'] if v['stage']))}); "
        f"verl-lint caught {caught} ({100 * caught / max(rejected, 1):.0f}%), {len(false_errors)} errors on accepted launches"
    )
    for line in known:
        print(f"  known miss {line}")
    for line in false_errors + misses:
        print(f"  {line}")
    assert not false_errors, "\n".join(false_errors)
    assert not misses, "\n".join(misses)
    assert caught >= 0.95 * rejected
