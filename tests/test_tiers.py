"""The test tiers and the test session's cache (see conftest.py).

`python -m pytest -m network tests/test_tiers.py` downloads any verl release or engine wheel a
fast run skipped for.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import NEWEST, OLDEST, RELEASES, SHARED_CACHE
from test_engine_args import WHEELS

from verl_lint.launch.locate import read_version

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.network
@pytest.mark.parametrize("version", RELEASES)
def test_release_is_in_the_test_cache(verl_trees, version):
    tree = verl_trees[version]
    assert tree.version == version and read_version(tree.root) == version
    assert (tree.root / "verl" / "trainer" / "config" / "ppo_trainer.yaml").is_file()


@pytest.mark.network
@pytest.mark.parametrize("dist,version", [(d, v) for _, d, v in WHEELS])
def test_engine_wheel_is_in_the_test_cache(wheel, dist, version):
    assert wheel(dist, version).name.startswith(f"{dist.replace('-', '_')}-{version}-")


def test_ci_runs_the_readme_command_with_every_tier():
    readme = (ROOT / "README.md").read_text()
    [command] = re.findall(r"## Run the tests\n\n```bash\n(.*)\n```", readme)
    assert command.endswith('python -m pytest -q -p no:cacheprovider -m "slow or network or not slow"')
    assert (ROOT / ".ci" / "run").read_text().rstrip("\n").splitlines()[-1] == command


@pytest.mark.slow
def test_the_oracle_tier_runs_in_ci_not_in_the_fast_tier():
    """README's command (CI's) selects the oracle tests; plain `pytest` (addopts) does not."""

    def selected(*marker: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", *marker, "tests/test_oracle.py"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout

    assert "2 tests collected" in selected("-m", "slow or network or not slow")
    assert "2 deselected" in selected()


@pytest.mark.slow
def test_a_session_caches_privately_and_says_which_release_is_missing(tmp_path):
    """A session without network tests against a user cache holding only verl 0.9.1: the 0.9.1
    example runs and the 0.5.0 one skips, naming the command that downloads it; the user cache
    gains nothing but its download folders."""
    user = tmp_path / "user-cache"
    (user / "releases").mkdir(parents=True)
    (user / "releases" / f"verl-{NEWEST}").symlink_to(SHARED_CACHE / "releases" / f"verl-{NEWEST}")
    env = os.environ | {"VERL_LINT_CACHE_DIR": str(user)}
    pick = f"VL101/bad-1:{NEWEST} or VL101/bad-1:{OLDEST}"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-rs",
            "-m",
            "not network",
            "tests/test_rule_examples.py",
            "-k",
            pick,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "1 passed, 1 skipped" in r.stdout, r.stdout[-3000:]
    assert (
        f"verl {OLDEST} is not in the test download cache {user}; `python -m pytest -m network tests/test_tiers.py` downloads it"
        in r.stdout
    )
    assert sorted(p.name for p in user.iterdir()) == ["releases", "wheels"]
    assert [p.name for p in (user / "releases").iterdir()] == [f"verl-{NEWEST}"]
