"""Shared fixtures: real verl releases from the package registry, cached once per machine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from verl_lint.config.compose import Composer
from verl_lint.launch.locate import release_tree
from verl_lint.pipeline import Options
from verl_lint.runner import lint_file

NEWEST = "0.9.1"
OLDER = "0.7.1"
RELEASES = (NEWEST, OLDER)
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(scope="session")
def verl_trees():
    """{version: VerlTree} of real releases (the wheel from the package index, unpacked, cached)."""
    return {v: release_tree(v) for v in RELEASES}


@pytest.fixture(scope="session")
def composer(tmp_path_factory):
    # A private on-disk cache so tests never depend on an earlier run's state.
    return Composer(cache=True, cache_root=tmp_path_factory.mktemp("bases"))


@pytest.fixture
def lint(verl_trees, composer, tmp_path):
    """lint(script_text, version=NEWEST, **options) -> FileReport for a script written to tmp_path."""

    def run(text: str, version: str = NEWEST, name: str = "run.sh", **kw):
        path = tmp_path / name
        path.write_bytes(text.encode("utf-8", "surrogateescape"))  # examples may carry invalid UTF-8
        return lint_file(path, Options(verl_tree=verl_trees[version], **kw), composer)

    return run


def codes(report) -> list[str]:
    return [d.code for d in report.diagnostics]


os.environ.setdefault("NO_COLOR", "1")
