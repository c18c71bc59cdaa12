"""Shared fixtures, the test tiers and the test session's cache.

Tiers (markers in pyproject.toml): plain `python -m pytest` runs the fast tier (addopts
`-m "not slow and not network and not oracle"`); `-m slow`, `-m network` and `-m oracle`
(tests/test_oracle.py) select the rest, and README's
"Run the tests" command (what CI runs) selects every tier.

Cache: the session runs with VERL_LINT_CACHE_DIR set to a fresh private directory, removed at
the end, so no test reads or writes the user's cache (~/.cache/verl-lint) or depends on an
earlier run. The one exception is the download cache the tests share across runs: the private
directory's `releases/` and `wheels/` are symlinks to the user's, so each verl release and
engine wheel is downloaded once per machine. A test that needs one that is not there yet skips,
naming the command that downloads it, unless the session runs network tests (then it downloads).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from verl_lint.cache import cache_dir, make_dir

# Before anything else of verl-lint is imported (loading the rule pack caches its tables): the
# user's cache, whose downloads the tests share, then the session's private cache.
SHARED_CACHE = cache_dir()
_PRIVATE_CACHE = Path(tempfile.mkdtemp(prefix="verl-lint-tests-"))
for _name in ("releases", "wheels"):
    (_PRIVATE_CACHE / _name).symlink_to(make_dir(SHARED_CACHE / _name), target_is_directory=True)
os.environ["VERL_LINT_CACHE_DIR"] = str(_PRIVATE_CACHE)
os.environ.setdefault("NO_COLOR", "1")

from verl_lint.config.compose import Composer  # noqa: E402
from verl_lint.engines.wheels import fetch_wheel  # noqa: E402
from verl_lint.launch.locate import VerlTree, release_tree  # noqa: E402
from verl_lint.runner import lint_file, lint_paths  # noqa: E402
from verl_lint.runs import Options  # noqa: E402

NEWEST = "0.9.1"
OLDER = "0.7.1"
OLDEST = "0.5.0"
RELEASES = (NEWEST, OLDER, OLDEST)
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def across_releases(fails_on_oldest: str = "") -> list:
    """RELEASES for `parametrize`: the newest in the fast tier, the older ones `slow`. With
    `fails_on_oldest` (why), the OLDEST case is a strict xfail: the test does not hold there yet."""
    older = []
    for v in (OLDER, OLDEST):
        known = [pytest.mark.xfail(strict=True, reason=fails_on_oldest)] if v == OLDEST and fails_on_oldest else []
        older.append(pytest.param(v, marks=[pytest.mark.slow, *known]))
    return [NEWEST, *older]


FETCH = "python -m pytest -m network tests/test_tiers.py"

_downloads = False  # this session runs network tests: missing releases and wheels are downloaded


@pytest.hookimpl(trylast=True)  # after `-m` deselected what this session does not run
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    global _downloads
    _downloads = any(item.get_closest_marker("network") for item in items)


def pytest_unconfigure() -> None:
    shutil.rmtree(_PRIVATE_CACHE, ignore_errors=True)  # removes the symlinks, not what they point to


def cached_release(version: str) -> VerlTree | None:
    """verl `version` from the shared download cache, or None when it was never downloaded."""
    if (SHARED_CACHE / "releases" / f"verl-{version}" / "verl" / "trainer").is_dir():
        return release_tree(version)
    return None


def _not_cached(what: str) -> None:
    pytest.skip(f"{what} is not in the test download cache {SHARED_CACHE}; `{FETCH}` downloads it")


class _Releases(dict):
    """{version: VerlTree}, each release looked up (or downloaded) when a test first needs it."""

    def __missing__(self, version: str) -> VerlTree:
        tree = cached_release(version)
        if tree is None:
            if not _downloads:
                _not_cached(f"verl {version}")
            tree = release_tree(version)
        self[version] = tree
        return tree


@pytest.fixture(scope="session")
def verl_trees() -> dict[str, VerlTree]:
    """{version: VerlTree} of real releases (the wheel from the package index, unpacked, cached)."""
    return _Releases()


@pytest.fixture(scope="session")
def wheel():
    """wheel(dist, version) -> the engine wheel from the shared download cache (downloaded
    when the session runs network tests, else the test skips saying how to get it)."""

    def get(dist: str, version: str) -> Path:
        name = re.sub(r"[-_.]+", "_", dist.lower())  # how the wheel file spells the project
        if not _downloads and not any((SHARED_CACHE / "wheels").glob(f"{name}-{version}-*.whl")):
            _not_cached(f"the {dist} {version} wheel")
        return fetch_wheel(dist, version)

    return get


@pytest.fixture(scope="session")
def composer(tmp_path_factory):
    # A private on-disk cache so tests never depend on an earlier run's state.
    return Composer(cache=True, cache_root=tmp_path_factory.mktemp("bases"))


@pytest.fixture
def lint(verl_trees, composer, tmp_path):
    """lint(script_text, version=NEWEST, **options) -> FileReport for a script written to tmp_path.
    The GPU is an 80 GiB one unless `gpu_gib` says otherwise (None: unknown, as without --gpu).
    No wall clock unless `timeout` gives one: what a test finds never depends on the machine's
    load (the launch budget, counted in work, stays)."""

    def run(text: str, version: str = NEWEST, name: str = "run.sh", **kw):
        kw.setdefault("timeout", 0)
        if "gpu_gib" not in kw:
            kw.update(gpu_gib=80.0, gpu_origin="an 80 GiB GPU")
        path = tmp_path / name
        path.write_bytes(text.encode("utf-8", "surrogateescape"))  # examples may carry invalid UTF-8
        return lint_file(path, Options(verl_tree=verl_trees[version], **kw), composer)

    return run


# A project's own primary config on top of verl's ppo_trainer (the layout verl's README recommends).
PROJECT_HEAD = "hydra:\n  searchpath:\n    - pkg://verl.trainer.config\ndefaults:\n  - ppo_trainer\n  - _self_\n"


@pytest.fixture
def project(verl_trees, tmp_path, monkeypatch):
    """project(body, overrides="", version=NEWEST) -> the FileReport of run.sh launching main_ppo
    with --config-name=my_grpo, config/my_grpo.yaml being PROJECT_HEAD + body (in tmp_path, the
    working directory, so the config's findings are at `config/my_grpo.yaml`)."""

    def run(body: str, overrides: str = "", version: str = NEWEST):
        (tmp_path / "config").mkdir(exist_ok=True)
        (tmp_path / "config" / "my_grpo.yaml").write_text(PROJECT_HEAD + body)
        launch = (
            f"python3 -m verl.trainer.main_ppo --config-path=$(pwd)/config --config-name=my_grpo {overrides}".rstrip()
        )
        (tmp_path / "run.sh").write_text(f"#!/bin/bash\n{launch}\n")
        monkeypatch.chdir(tmp_path)
        [report] = lint_paths([Path("run.sh")], Options(verl_tree=verl_trees[version], timeout=0), use_cache=False)
        return report

    return run


def json_findings(text: str) -> list[dict]:
    """The findings of a `--format json` report: all but its closing summary object."""
    *items, summary = json.loads(text)
    assert summary["type"] == "summary", summary
    return items


def codes(report) -> list[str]:
    return [d.code for d in report.diagnostics]
