"""bench/precision.py: the scorer, the labels file, and the script end to end on a real git clone."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import NEWEST

BENCH = Path(__file__).resolve().parent.parent / "bench"
SCRIPT = BENCH / "precision.py"
_spec = importlib.util.spec_from_file_location("precision_bench", SCRIPT)
precision = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = precision  # dataclasses look their module up there
_spec.loader.exec_module(precision)

HEADER = "repo,path,line,code,key,verdict,reason\n"


def finding(path, line, code, key, severity="error"):
    return {"path": path, "line": line, "code": code, "key": key, "severity": severity, "message": f"{code} msg"}


def write_labels(tmp_path: Path, rows: str) -> Path:
    p = tmp_path / "labels.csv"
    p.write_text(HEADER + rows)
    return p


def test_score_counts_precision_lost_and_new(tmp_path):
    labels = precision.load_labels(
        write_labels(
            tmp_path,
            (
                "A,run.sh,3,VL101,trainer.x,real,not a key\n"
                "A,run.sh,4,VL501,VLLM_ATTENTION_BACKEND,false,pinned vllm 0.6.3\n"
                "A,run.sh,9,VL220,algorithm.kl_ctrl.kl_coef,false,deliberate 0\n"
                "A,gone.sh,1,VL102,data.path,real,placeholder\n"
                "B,x.sh,1,VL101,k,real,a repo that was skipped\n"
            ),
        )
    )
    reports = {
        "A": [
            finding("run.sh", 3, "VL101", "trainer.x"),
            finding("run.sh", 4, "VL501", "VLLM_ATTENTION_BACKEND"),
            finding("run.sh", 9, "VL220", "algorithm.kl_ctrl.kl_coef", "warning"),
            finding("run.sh", 12, "VL107", "data.truncation", "warning"),  # unlabelled
            finding("run.sh", 1, "VL231", "trainer.y", "info"),  # counted, not scored
        ]
    }
    r = precision.score(reports, labels)
    err, warn = r["repos"]["A"]["error"], r["repos"]["A"]["warning"]
    assert (err["reported"], err["real"], err["false"], err["unlabelled"], err["precision"]) == (2, 1, 1, 0, 0.5)
    assert (warn["reported"], warn["real"], warn["false"], warn["unlabelled"], warn["precision"]) == (2, 0, 1, 1, 0.0)
    assert r["repos"]["A"]["info"] == {"reported": 1}
    assert r["totals"]["error"]["precision"] == 0.5
    # only A was linted: B's label is neither lost nor scored
    assert [(x["path"], x["verdict"]) for x in r["lost"]] == [("gone.sh", "real")]
    assert [(x["path"], x["line"], x["code"]) for x in r["new"]] == [("run.sh", 12, "VL107")]
    text = precision.render(r, ["B"])
    assert "LOST TRUE FINDING A/gone.sh:1 VL102 data.path" in text
    assert "B             skipped (no clone)" in text
    assert "A/run.sh:12 VL107 [warning] data.truncation VL107 msg" in text


@pytest.mark.parametrize(
    "row, problem",
    [
        ("A,run.sh,3,VL101,k,maybe,unsure\n", "verdict must be real or false"),
        ("A,run.sh,3,VL101,k,real,  \n", "empty reason"),
        ("A,run.sh,x,VL101,k,real,r\n", "line must be a number"),
        ("A,run.sh,3,VL101,k,real,r\nA,run.sh,3,VL101,k,false,r2\n", "duplicate label"),
        ("A,run.sh,3,VL101,k,real\n", "expected 7 columns"),
    ],
)
def test_bad_labels_are_one_line_errors(tmp_path, row, problem):
    with pytest.raises(precision.BenchError, match=problem):
        precision.load_labels(write_labels(tmp_path, row))


def test_project_labels_file_is_well_formed():
    labels = precision.load_labels(precision.LABELS)  # raises on a bad verdict, reason or duplicate
    assert len(labels) >= 300
    pins = precision.tomllib.loads(precision.PINS.read_text())
    assert {k[0] for k in labels} == set(pins) == {"TinyZero", "Logic-RL", "Reasoning360", "verl-tool", "RAGEN"}
    assert {v.verdict for v in labels.values()} == {"real", "false"}
    assert all(len(v.reason) > 20 for v in labels.values())
    assert all(len(p["commit"]) == 40 for p in pins.values())


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=cwd)


def test_no_clones_is_skipped_exit_0(tmp_path):
    r = run("--clones", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "skipped: no clone of TinyZero, Logic-RL, Reasoning360, verl-tool, RAGEN" in r.stdout


def test_bad_usage_exit_2_one_line(tmp_path):
    r = run("--clones", str(tmp_path / "missing"))
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1
    assert r.stderr.startswith("precision: error: ") and "not a directory" in r.stderr
    r = run("--clones", str(tmp_path), "--repo", "NoSuchRepo")
    assert r.returncode == 2 and "unknown repository ['NoSuchRepo']" in r.stderr


def git(repo: Path, *args: str) -> str:
    cmd = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def clone(tmp_path):
    """A real git repository named like a pinned project: the pin has a key typo, HEAD fixed it."""
    repo = tmp_path / "clones" / "Proj"
    (repo / "scripts").mkdir(parents=True)
    git(repo, "init", "-q")
    script = repo / "scripts" / "train.sh"
    script.write_text(
        "python3 -m verl.trainer.main_ppo \\\n    trainer.nnodes=1 actor_rollout_ref.rollout.name=vllm \\\n    trainer.total_epochz=2\n"
    )
    (repo / "notes.txt").write_text("not a script\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "pin")
    pin = git(repo, "rev-parse", "HEAD")
    script.write_text("python3 -m verl.trainer.main_ppo trainer.nnodes=1 trainer.total_epochs=2\n")
    git(repo, "commit", "-qam", "later")
    script.write_text("# local edit, uncommitted\n")
    return repo, pin


def write_pins(tmp_path: Path, pin: str, verl_root: str) -> Path:
    p = tmp_path / "pins.toml"
    p.write_text(f'[Proj]\ngithub = "someone/Proj"\ncommit = "{pin}"\nargs = ["--verl-root", "{verl_root}"]\n')
    return p


@pytest.mark.slow
def test_end_to_end_lints_the_pin_not_the_work_tree(tmp_path, clone, verl_trees):
    repo, pin = clone
    pins = write_pins(tmp_path, pin, str(verl_trees[NEWEST].root))
    labels = write_labels(
        tmp_path, "Proj,scripts/train.sh,3,VL101,trainer.total_epochz,false,judged false for the test\n"
    )
    before = (git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain"), git(repo, "worktree", "list"))
    args = ["--clones", str(tmp_path / "clones"), "--pins", str(pins), "--labels", str(labels)]
    r = run(*args, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["repos"]["Proj"]["error"] == {"reported": 1, "real": 0, "false": 1, "unlabelled": 0, "precision": 0.0}
    assert out["lost"] == [] and out["new"] == []
    # the clone is as it was: same HEAD, the uncommitted edit kept, no extra worktree
    assert (git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain"), git(repo, "worktree", "list")) == before
    # a measurement: exit 1 only when asked for a minimum it misses
    r = run(*args, "--min-error-precision", "95")
    assert r.returncode == 1 and "precision: error precision 0.0% < 95.0%" in r.stderr
    assert "Proj          error            1     0     1      0       0.0%" in r.stdout


def test_pin_missing_from_clone_is_one_line(tmp_path, clone, verl_trees):
    repo, _ = clone
    pins = write_pins(tmp_path, "0" * 40, str(verl_trees[NEWEST].root))
    r = run("--clones", str(tmp_path / "clones"), "--pins", str(pins))
    assert r.returncode == 2
    assert (
        r.stderr.splitlines()[-1]
        == f"precision: error: {repo}: pinned commit {'0' * 40} is not in this clone (git fetch it, or re-clone)"
    )
