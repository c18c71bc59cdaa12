"""verl-lint as a wheel installs it: the knowledge tables come with it, from nowhere else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RULES = "import json, sys; from verl_lint.cli import main; sys.exit(main(['rules', '--format', 'json']))"


def _rules(env: dict, cwd: Path) -> list[dict]:
    r = subprocess.run([sys.executable, "-c", RULES], capture_output=True, text=True, env=env, cwd=cwd, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)


@pytest.mark.slow
def test_wheel_install_beside_an_unrelated_rules_package(tmp_path):
    """An unrelated top-level `rules` package in site-packages once made 46 of 97 rules vanish."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path / "dist"),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    wheel = next((tmp_path / "dist").glob("verl_lint-*.whl"))
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        timeout=600,
    )
    (target / "rules").mkdir()
    (target / "rules" / "__init__.py").write_text("")  # someone else's `rules` package
    (target / "rules" / "removed_keys.yaml").write_text("[]\n")
    env = dict(os.environ, PYTHONPATH=str(target), VERL_LINT_CACHE_DIR=str(tmp_path / "cache"))
    installed = _rules(env, tmp_path)
    developed = _rules(dict(os.environ, VERL_LINT_CACHE_DIR=str(tmp_path / "cache2")), tmp_path)
    assert [r["code"] for r in installed] == [r["code"] for r in developed]
    assert len(installed) >= 97
    # The rules' example fixtures are package data: a rule's page shows them, its config files too.
    page = [sys.executable, "-c", "import sys; from verl_lint.cli import main; sys.exit(main(['rule', 'VL110']))"]
    shown = subprocess.run(page, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "Bad example" in shown.stdout and "config/my_grpo.yaml:" in shown.stdout, shown.stdout[-2000:]


def test_a_missing_table_is_an_error_not_fewer_rules(tmp_path):
    """A knowledge package without its tables stops with one line naming the table."""
    pkg = tmp_path / "verl_lint_knowledge"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    env = dict(os.environ, PYTHONPATH=str(tmp_path), VERL_LINT_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run(
        [sys.executable, "-c", RULES], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-1500:]
    assert r.stderr.startswith("verl-lint: error: verl-lint's knowledge table ") and "is not installed" in r.stderr
