"""The house's own hygiene: ruff (lint and format) on the repository and mypy on the base layer,
with the settings in pyproject.toml. The linters are pinned in the `test` extra."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_architecture import BASE, PACKAGE

ROOT = PACKAGE.parent


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def linters():
    for tool in ("ruff", "mypy"):
        if _run(tool, "--version").returncode != 0:
            pytest.skip(f"{tool} is not installed: pip install -e '.[test]'")


def test_ruff_lint_is_clean(linters):
    r = _run("ruff", "check", "--no-cache", ".")
    assert r.returncode == 0, r.stdout + r.stderr


def test_ruff_format_is_clean(linters):
    r = _run("ruff", "format", "--no-cache", "--check", ".")
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.slow  # ~25 s of CPU without its cache
def test_mypy_on_the_base_layer(linters, tmp_path):
    files = [str(PACKAGE / f"{m}.py") for m in BASE]
    r = _run("mypy", "--cache-dir", str(tmp_path / "mypy"), *files)
    assert r.returncode == 0, r.stdout + r.stderr


def _bad_file(tmp_path: Path) -> Path:
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nx = ( 1 )\ny: int = 'text'\n")  # an unused import, unformatted, a type error
    return bad


def test_ruff_fails_on_a_violation(linters, tmp_path):
    config, bad = ["--config", str(ROOT / "pyproject.toml")], str(_bad_file(tmp_path))
    assert _run("ruff", "check", "--no-cache", *config, bad).returncode == 1
    assert _run("ruff", "format", "--no-cache", "--check", *config, bad).returncode == 1


@pytest.mark.slow
def test_mypy_fails_on_a_violation(linters, tmp_path):
    config = ["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path / "mypy")]
    assert _run("mypy", *config, str(_bad_file(tmp_path))).returncode == 1
