"""The CI gate: tree scan, SARIF/GitHub output, suppressions, baseline, parallel determinism."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import pytest
from conftest import NEWEST, json_findings
from test_cli import cli

from verl_lint import __version__
from verl_lint.report.render import render_json
from verl_lint.runner import lint_paths
from verl_lint.runs import Options
from verl_lint.settings import Settings
from verl_lint.walk import collect

SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"
BAD = "python3 -m verl.trainer.main_ppo \\\n    trainer.nnodez=1 \\\n    data.max_prompt_length=64 \\\n    actor_rollout_ref.rollout.name=vllm\n"


@pytest.fixture
def tree_dir(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "bad.sh").write_text("#!/bin/bash\n" + BAD)
    (tmp_path / "a" / "noext").write_text("#!/bin/sh\necho no launch here\n")
    (tmp_path / "notes.txt").write_text("python3 -m verl.trainer.main_ppo trainer.nnodez=1\n")
    (tmp_path / "ignored").mkdir()
    (tmp_path / "ignored" / "x.sh").write_text(BAD)
    (tmp_path / ".gitignore").write_text("ignored/\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    return tmp_path


def test_scan_honours_gitignore_and_shebangs(tree_dir):
    files, errors = collect([str(tree_dir)], Settings())
    assert not errors
    assert sorted(p.relative_to(tree_dir).as_posix() for p in files) == ["a/bad.sh", "a/noext"]
    files, _ = collect([str(tree_dir)], Settings(exclude=("a/bad.sh",), root=tree_dir))
    assert [p.name for p in files] == ["noext"]


@pytest.mark.slow
def test_sarif_validates_against_the_schema(tree_dir, verl_trees):
    r = cli("check", "--verl-root", str(verl_trees[NEWEST].root), "--format", "sarif", str(tree_dir))
    assert r.returncode == 1
    doc = json.loads(r.stdout.split("\n\n")[0] if r.stdout.startswith("{") else r.stdout)
    jsonschema.validate(doc, json.loads(SCHEMA.read_text()))
    results = doc["runs"][0]["results"]
    assert [x["ruleId"] for x in results] == ["VL101"]
    region = results[0]["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (3, 5)
    run = doc["runs"][0]
    # Only the rules with results are embedded (not the whole registry), each with its page.
    [rule] = run["tool"]["driver"]["rules"]
    assert rule["id"] == "VL101" and rule["help"]["markdown"].startswith("# VL101 unknown-config-key\n")
    assert "## What it does\nRuns Hydra" in rule["help"]["markdown"]  # dedented, not the raw docstring
    props = run["properties"]
    assert (props["verlLintVersion"], props["verlVersions"]) == (__version__, [NEWEST])
    # The run's accounting, as in the JSON report's summary: two scripts, one launch.
    assert props["files"] == {"linted": 2, "unreadable": 0, "not_analysed": 0}
    assert (props["launches"]["analysed"], props["launches"]["not_analysable"], props["launches"]["reasons"]) == (
        1,
        0,
        {},
    )
    assert results[0]["partialFingerprints"]["verlLint/v1"].endswith(":1")


@pytest.mark.slow
def test_sarif_fingerprints_survive_line_moves(tmp_path, verl_trees):
    """GitHub matches alerts across commits by fingerprint: inserting lines above a finding keeps
    it; two identical findings in one file stay distinct."""
    line = "python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm trainer.nnodez=1\n"

    def prints(text):
        (tmp_path / "s.sh").write_text(text)
        r = cli("check", "--verl-root", str(verl_trees[NEWEST].root), "--format", "sarif", str(tmp_path / "s.sh"))
        return [x["partialFingerprints"]["verlLint/v1"] for x in json.loads(r.stdout)["runs"][0]["results"]]

    [before] = prints("#!/bin/bash\n" + line)
    [after] = prints("#!/bin/bash\n# a comment\n\n" + line)
    assert before == after
    twice = prints("#!/bin/bash\n" + line + line)
    assert len(set(twice)) == 2 and twice[0] == before


@pytest.mark.slow
def test_github_annotations(tree_dir, verl_trees):
    r = cli("check", "--verl-root", str(verl_trees[NEWEST].root), "--format", "github", str(tree_dir))
    [line] = [l for l in r.stdout.splitlines() if l.startswith("::")]
    assert (
        line.startswith("::error file=")
        and ",line=3,col=5,endLine=3,endColumn=21,title=VL101 unknown-config-key::" in line
    )


@pytest.mark.slow
def test_output_file_and_text_summary(tree_dir, verl_trees, tmp_path):
    out = tmp_path / "report.json"
    r = cli(
        "check", "--verl-root", str(verl_trees[NEWEST].root), "--format", "json", "--output", str(out), str(tree_dir)
    )
    assert json_findings(out.read_text())[0]["code"] == "VL101"
    assert "Found 1 finding (1 error, 0 warnings) in 1 of 2 scripts linted, 1 launch" in r.stdout


@pytest.mark.slow
def test_suppressions(lint):
    inline = 'ARGS=(\n  trainer.nnodez=1  # verl-lint: disable=VL101\n)\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm "${ARGS[@]}"\n'
    assert [d.code for d in lint(inline).diagnostics] == []
    above = 'ARGS=(\n  # verl-lint: disable=unknown-config-key\n  trainer.nnodez=1\n)\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm "${ARGS[@]}"\n'
    assert [d.code for d in lint(above).diagnostics] == []
    whole = "# verl-lint: disable-file=VL1\npython3 -m verl.trainer.main_ppo trainer.nnodez=1 +trainer.nnodes=2\n"
    assert [d.code for d in lint(whole).diagnostics] == []
    unused = "python3 -m verl.trainer.main_ppo trainer.nnodes=1 actor_rollout_ref.rollout.name=vllm  # verl-lint: disable=VL101,VL301\n"
    got = lint(unused).diagnostics
    assert [(d.code, d.key, d.span.line) for d in got] == [("VL003", "VL101", 1), ("VL003", "VL301", 1)]


def test_per_file_ignores(tree_dir, verl_trees):
    files, _ = collect([str(tree_dir)], Settings())
    reports = lint_paths(files, Options(verl_tree=verl_trees[NEWEST]), per_file_ignores={"a/*.sh": ("VL101",)}, jobs=1)
    assert all(not r.diagnostics for r in reports)


@pytest.mark.slow
def test_baseline_survives_edits_above_and_reports_new(tree_dir, verl_trees, tmp_path):
    root = str(verl_trees[NEWEST].root)
    baseline = tmp_path / "baseline.json"
    assert (
        cli("check", "--verl-root", root, "--write-baseline", str(baseline), str(tree_dir), cwd=tree_dir).returncode
        == 0
    )
    script = tree_dir / "a" / "bad.sh"
    script.write_text("#!/bin/bash\n# a new comment\nset -x\n\n" + BAD)
    r = cli("check", "--verl-root", root, "--baseline", str(baseline), str(tree_dir), cwd=tree_dir)
    assert r.returncode == 0, r.stdout
    script.write_text(script.read_text().replace("data.max_prompt_length=64", "data.max_prompt_lengthh=64"))
    r = cli("check", "--verl-root", root, "--baseline", str(baseline), str(tree_dir), cwd=tree_dir)
    assert r.returncode == 1 and "max_prompt_lengthh" in r.stdout and "nnodez" not in r.stdout


@pytest.mark.slow
def test_serial_and_parallel_are_byte_identical(tmp_path, verl_trees):
    for i in range(30):
        (tmp_path / f"s{i:02d}.sh").write_text(
            f"python3 -m verl.trainer.main_ppo trainer.nnodes={i % 4} data.train_batch_size={100 + i} trainer.nnodez=1\n"
        )
    files, _ = collect([str(tmp_path)], Settings())
    opts = Options(verl_tree=verl_trees[NEWEST])
    serial = render_json(lint_paths(files, opts, jobs=1))
    parallel = render_json(lint_paths(files, opts, jobs=2))
    assert serial == parallel and json.loads(serial)


@pytest.mark.slow
def test_junit_report(tree_dir, verl_trees):
    import xml.etree.ElementTree as ET

    r = cli("check", "--verl-root", str(verl_trees[NEWEST].root), "--format", "junit", str(tree_dir))
    suite = ET.fromstring(r.stdout).find("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    [failed] = [c for c in suite if c.find("failure") is not None]
    assert "VL101" in failed.find("failure").text and failed.get("name").endswith("bad.sh")


def test_cross_field_findings_name_the_other_lines(tmp_path, verl_trees):
    """VL301 rests on four keys: it points at one and lists where the script set the others
    (text notes, JSON `related`, SARIF `relatedLocations`); keys left at verl's defaults have no
    line of the user's and are not listed."""
    script = tmp_path / "r.sh"
    script.write_text(
        "#!/bin/bash\nBS=1000\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm \\\n"
        "  data.train_batch_size=$BS \\\n  actor_rollout_ref.rollout.n=5 \\\n  trainer.n_gpus_per_node=8 trainer.nnodes=6\n"
    )
    args = ("check", "--verl-root", str(verl_trees[NEWEST].root), "--select", "VL301", str(script))
    [finding] = json_findings(cli(*args, "--format", "json").stdout)
    assert (finding["line"], finding["column"], finding["key"]) == (6, 29, "trainer.nnodes")
    assert [(r["key"], r["line"], r["column"]) for r in finding["related"]] == [
        ("data.train_batch_size", 4, 3),
        ("actor_rollout_ref.rollout.n", 5, 3),
        ("trainer.n_gpus_per_node", 6, 3),
    ]
    doc = json.loads(cli(*args, "--format", "sarif").stdout)
    jsonschema.validate(doc, json.loads(SCHEMA.read_text()))
    [result] = doc["runs"][0]["results"]
    assert [
        (x["physicalLocation"]["region"]["startLine"], x["message"]["text"]) for x in result["relatedLocations"]
    ] == [
        (4, "`data.train_batch_size=1000` set here"),
        (5, "`actor_rollout_ref.rollout.n=5` set here"),
        (6, "`trainer.n_gpus_per_node=8` set here"),
    ]
    text = cli(*args).stdout
    assert f"  = note: `data.train_batch_size=1000` set here ({script}:4:3)\n" in text
