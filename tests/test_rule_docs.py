"""docs/rules/: one page per rule, generated from the registry, and the addresses reports give."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import NEWEST, json_findings

from verl_lint.cli import main
from verl_lint.registry import REGISTRY
from verl_lint.report.render import _checkout_documentation
from verl_lint.rules import pack  # noqa: F401 - registers the rule pack
from verl_lint.settings import tomllib

REPO = Path(__file__).resolve().parent.parent


def test_committed_pages_are_what_the_registry_generates():
    r = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "make_rule_docs.py"), "--check"], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert {p.stem for p in (REPO / "docs" / "rules").glob("VL*.md")} == {r.code for r in REGISTRY}


def test_reports_link_each_finding_to_its_public_page_or_the_docs_url_setting(tmp_path, verl_trees, capsys):
    """JSON and SARIF link each rule to its page where code scanning can open it: the project's
    `Documentation` address ([project.urls], the committed docs/rules/ on GitHub), never a file://
    of the checkout; a fork sets its own with `docs-url` in [tool.verl-lint]."""
    (tmp_path / "s.sh").write_text(
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm trainer.nnodez=1\n"
    )
    args = ["check", "--verl-root", str(verl_trees[NEWEST].root), str(tmp_path / "s.sh"), "--no-cache"]

    def links():
        main([*args, "--format", "json"])
        [finding] = json_findings(capsys.readouterr().out)
        main([*args, "--format", "sarif"])
        [rule] = json.loads(capsys.readouterr().out)["runs"][0]["tool"]["driver"]["rules"]
        return finding["url"], rule["helpUri"]

    documentation = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["urls"]["Documentation"]
    assert documentation == "https://github.com/verl-lint/verl-lint/blob/main/docs/rules/"
    assert _checkout_documentation() + "/" == documentation  # read from the checkout when the metadata predates it
    url, help_uri = links()
    assert url == help_uri == documentation + "VL101.md"
    assert (REPO / "docs" / "rules" / "VL101.md").read_text(encoding="utf-8") == REGISTRY.get(
        "VL101"
    ).page()  # the page it names
    (tmp_path / "pyproject.toml").write_text(
        '[tool.verl-lint]\ndocs-url = "https://docs.example.org/verl-lint/rules"\n'
    )
    assert links() == ("https://docs.example.org/verl-lint/rules/VL101.md",) * 2
    # Text output names no address (`verl-lint rule VL101` prints the page).
    main(args)
    assert "https://" not in capsys.readouterr().out


def test_the_docs_url_setting_must_be_an_address(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text('[tool.verl-lint]\ndocs-url = "docs/rules"\n')
    (tmp_path / "s.sh").write_text("#!/bin/bash\necho hi\n")
    assert main(["check", str(tmp_path / "s.sh")]) == 2
    assert "docs-url" in capsys.readouterr().err


def test_rule_codes_are_case_insensitive_as_elsewhere(capsys):
    assert main(["rule", "vl101"]) == 0
    assert capsys.readouterr().out.startswith("VL101 unknown-config-key")
