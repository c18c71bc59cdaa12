"""docs/rules/: one page per rule, generated from the registry, and the addresses reports give."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import pytest

from conftest import NEWEST, json_findings
from test_cli import cli
from verl_lint.registry import REGISTRY
from verl_lint.report.render import docs_url
from verl_lint.rules import pack  # noqa: F401 - registers the rule pack

REPO = Path(__file__).resolve().parent.parent


def test_committed_pages_are_what_the_registry_generates():
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "make_rule_docs.py"), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert {p.stem for p in (REPO / "docs" / "rules").glob("VL*.md")} == {r.code for r in REGISTRY}


def test_reports_link_each_finding_to_its_page(tmp_path, verl_trees):
    """Installed from this checkout (as the tests are), JSON and SARIF point at the page on disk."""
    if docs_url("VL101") is None:
        pytest.skip("verl-lint is not installed from a checkout with docs/rules/ (pip install -e .)")
    (tmp_path / "s.sh").write_text("#!/bin/bash\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm trainer.nnodez=1\n")
    args = ("check", "--verl-root", str(verl_trees[NEWEST].root), str(tmp_path / "s.sh"))
    [finding] = json_findings(cli(*args, "--format", "json").stdout)
    [rule] = json.loads(cli(*args, "--format", "sarif").stdout)["runs"][0]["tool"]["driver"]["rules"]
    assert finding["url"] == rule["helpUri"]
    page = Path(url2pathname(urlparse(finding["url"]).path))
    assert page.read_text(encoding="utf-8") == REGISTRY.get("VL101").page()
