"""Every launch is analysed or accounted for: launch forms real scripts use, counted
independently of the linter's own recognition."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import codes, json_findings


@pytest.fixture
def lint(lint):
    """The scripts here mark each analysed launch with a typo and leave the rollout engine
    unnamed, which verl 0.9.1 requires (VL109 at every launch): that rule is left out."""
    return lambda text, *args, **kw: lint(text, *args, ignore=("VL109",), **kw)


FORMS = """#!/bin/bash
nproc_per_node=8
torchrun --nnodes=1 --nproc_per_node=$nproc_per_node -m verl.trainer.main_ppo trainer.nnodez=1
torchrun --nproc_per_node=$UNSET_N --master_port $PORT -m verl.trainer.main_ppo trainer.nnodez=1
ray job submit --address=http://127.0.0.1:8265 -- VLLM_LOGGING_LEVEL=INFO python3 -m verl.trainer.main_ppo trainer.nnodez=1
srun -N 2 --gres=gpu:8 python3 -m verl.trainer.main_ppo trainer.nnodez=1
apptainer exec --nv img.sif python3 -m verl.trainer.main_ppo trainer.nnodez=1
uv run python3 -m verl.trainer.main_ppo trainer.nnodez=1
$LAUNCH_PREFIX python3 -m verl.trainer.main_ppo trainer.nnodez=1
timeout 10h python3 -m verl.trainer.main_ppo trainer.nnodez=1 2>&1 | tee log.txt &
su trainer -c "python3 -m verl.trainer.main_ppo trainer.nnodes=1"
python3 $PYFLAGS -m verl.trainer.main_ppo trainer.nnodes=1
echo "run: python3 -m verl.trainer.main_ppo"
"""
# Independently of verl-lint: a line that runs a verl entry point (not one that only prints it).
ENTRY_LINE = re.compile(r"^(?!\s*(echo|printf)\b).*-m\s+(verl|recipe)\.\w+", re.M)


def test_every_entry_point_line_is_analysed_or_reported(lint):
    report = lint(FORMS)
    lines = [FORMS[: m.start()].count("\n") + 1 for m in ENTRY_LINE.finditer(FORMS)]
    analysed = sorted(d.span.line for d in report.diagnostics if d.code == "VL101")  # each analysed launch has one typo
    skipped = sorted(d.span.line for d in report.diagnostics if d.code == "VL007")
    assert len(lines) == 10
    assert analysed == lines[:8], report.diagnostics
    assert skipped == lines[8:]
    assert report.launches == 8


def test_not_analysable_launches_say_why(lint):
    report = lint(FORMS)
    why = {d.span.line: (d.span.col, d.message) for d in report.diagnostics if d.code == "VL007"}
    assert why[11][0] == 15 and "inside a string (`su`" in why[11][1]
    assert why[12][0] == 21 and "$PYFLAGS is not set in the script" in why[12][1]


def test_job_command_env_reaches_the_driver_only(lint):
    report = lint(FORMS)
    d = next(d for d in report.diagnostics if d.code == "VL505")
    assert (d.span.line, d.span.col) == (5, 51)
    assert "is set in the job's command" in d.message and "driver process only" in d.message


BRANCHES = """#!/bin/bash
MODE=fsdp
if [ "$MODE" = megatron ]; then
    python3 -m verl.trainer.main_ppo trainer.nnodez=1
elif [ "$MODE" = fsdp ]; then
    python3 -m verl.trainer.main_ppo trainer.nnodes=1
else
    python3 -m verl.trainer.main_ppo trainer.n_gpus_per_nodes=1
fi
"""


def test_branches_the_script_does_not_take_are_still_checked(lint):
    report = lint(BRANCHES)
    found = {(d.span.line, d.span.col): d.message for d in report.diagnostics}
    assert codes(report) == ["VL101", "VL101"] and report.launches == 3
    assert found[(4, 38)].endswith("(in the branch at line 3, which the script's own values do not take)")
    assert found[(8, 38)].endswith("(in the branch at line 7, which the script's own values do not take)")


@pytest.mark.parametrize("mode,line", [("megatron", 4), ("other", 8)])
def test_the_branch_taken_carries_no_note(lint, mode, line):
    report = lint(BRANCHES.replace("MODE=fsdp", f"MODE={mode}"))
    taken = [d for d in report.diagnostics if d.span.line == line]
    assert len(taken) == 1 and "which the script's own values do not take" not in taken[0].message


CWD_FORMS = """#!/bin/bash
python3 -m verl.trainer.main_ppo --config-path="$(pwd)/examples/a/config" --config-name=my trainer.nnodez=1
python3 -m verl.trainer.main_ppo --config-path="${PWD}/examples/a/config" --config-name=my trainer.nnodez=1
python3 -m verl.trainer.main_ppo --config-path="$(cd "$(dirname "$0")" && pwd)/config" --config-name=${1:-my} trainer.nnodez=1
python3 -m verl.trainer.main_ppo --config-path="$(dirname "${BASH_SOURCE[0]}")/config" --config-name=my trainer.nnodez=1
python3 -m verl.trainer.main_ppo --config-path="$(pwd)/config" --config-name=my trainer.nnodez=1
"""
ROOT_NOTE = "(assuming the script runs from the repository root, where examples/a/config is; pass --cwd to say)"
OWN_NOTE = "(assuming the script runs from its own directory, where config is; pass --cwd to say)"


def _project(tmp_path, script_text: str, where: str = "examples/a"):
    """A git repository with a config `my` in `where`/config and the script `where`/run.sh."""
    (tmp_path / ".git").mkdir(exist_ok=True)
    conf = tmp_path / where / "config"
    conf.mkdir(parents=True)
    (conf / "my.yaml").write_text(
        "defaults:\n  - ppo_trainer\n  - _self_\nhydra:\n  searchpath:\n    - pkg://verl.trainer.config\n"
    )
    script = tmp_path / where / "run.sh"
    script.write_text(script_text)
    return script


@pytest.mark.slow
def test_config_paths_from_the_working_directory(tmp_path, verl_trees, composer):
    """`$(pwd)` / `$PWD` rest on where the script is run from: the repository root first, the
    script's own directory last; the findings say which was assumed. `$(dirname "$0")` forms
    name the script's directory whatever the working directory: no assumption to state."""
    from verl_lint.runner import lint_file
    from verl_lint.runs import Options

    script = _project(tmp_path, CWD_FORMS)
    report = lint_file(script, Options(verl_tree=verl_trees["0.9.1"], ignore=("VL109",)), composer)
    assert not report.errors, report.errors
    found = [(d.code, d.span.line) for d in report.diagnostics]
    assert found == [("VL101", n) for n in range(2, 7)], report.diagnostics
    notes = [
        d.message[d.message.rfind(" (assuming") + 1 :] if "(assuming" in d.message else None for d in report.diagnostics
    ]
    assert notes == [ROOT_NOTE, None, None, None, OWN_NOTE]  # each assumption said once per file


VENDORED = """#!/bin/bash
# run from the root of the project
PROJECT_DIR="$(pwd)"
CONFIG_PATH="$PROJECT_DIR/examples/a/config"
python3 -m verl.trainer.main_ppo --config-path="$CONFIG_PATH" --config-name=my trainer.nnodez=1
cd "$(dirname "$0")"
python3 -m verl.trainer.main_ppo --config-path="$(pwd)/config" --config-name=my trainer.nnodez=1
"""


@pytest.mark.slow
def test_a_vendored_repository_is_run_from_its_own_root(tmp_path, verl_trees, composer):
    """A project with verl inside it (`project/verl/examples/a/run.sh`, config under
    `project/verl/examples/a/config`): `$(pwd)` is `project/verl`, the first directory from the
    repository root down where the config exists. After `cd "$(dirname "$0")"` nothing is assumed."""
    from verl_lint.runner import lint_file
    from verl_lint.runs import Options

    script = _project(tmp_path, VENDORED, "verl/examples/a")
    report = lint_file(script, Options(verl_tree=verl_trees["0.9.1"], ignore=("VL109",)), composer)
    assert [(d.code, d.span.line) for d in report.diagnostics] == [("VL101", 5), ("VL101", 7)], report.diagnostics
    assert report.diagnostics[0].message.endswith(
        "(assuming the script runs from verl/ in the repository, where examples/a/config is; pass --cwd to say)"
    )
    assert "assuming" not in report.diagnostics[1].message


@pytest.mark.slow
def test_a_config_dir_found_nowhere_is_not_an_error_that_rests_on_a_guess(tmp_path, verl_trees):
    """No directory the script may run from has the config: VL007 naming them, not VL106. With
    --cwd (or the `cwd` setting, relative to the settings file) the same launch is a real VL106."""
    from test_cli import cli

    script = _project(
        tmp_path, "#!/bin/bash\npython3 -m verl.trainer.main_ppo --config-path=$(pwd)/nowhere/config --config-name=my\n"
    )
    root = str(verl_trees["0.9.1"].root)
    r = cli("check", "--verl-root", root, "--format", "json", str(script))
    [d] = json_findings(r.stdout)
    assert d["code"] == "VL007" and (d["line"], d["column"]) == (2, 34), d
    tried = f"{tmp_path}, {tmp_path / 'examples'}, {tmp_path / 'examples' / 'a'}"
    assert d["message"] == (
        "this launch was not checked: config directory nowhere/config not found relative to any assumed working "
        f"directory (tried {tried}); pass --cwd"
    )
    r = cli("check", "--verl-root", root, "--format", "json", "--cwd", str(tmp_path / "examples"), str(script))
    [d] = json_findings(r.stdout)
    assert d["code"] == "VL106" and f"{tmp_path}/examples/nowhere/config not found" in d["message"], d
    (tmp_path / "pyproject.toml").write_text('[tool.verl-lint]\ncwd = "examples/a"\n')
    r = cli("check", "--verl-root", root, "--format", "json", str(script))
    [d] = json_findings(r.stdout)
    assert d["code"] == "VL106" and f"{tmp_path}/examples/a/nowhere/config not found" in d["message"], d
    r = cli("check", "--verl-root", root, "--cwd", str(tmp_path / "missing"), str(script))
    assert r.returncode == 2 and r.stderr == f"verl-lint: error: --cwd {tmp_path / 'missing'}: not a directory\n"


NESTED = """#!/bin/bash
X=1
bash -c "python3 -m verl.trainer.main_ppo trainer.nnodez=$X"
CMD="python3 -m verl.trainer.main_ppo trainer.nnodez=2"
eval "$CMD"
cat <<EOF | bash
python3 -m verl.trainer.main_ppo trainer.nnodez=3
EOF
ray job submit --address=x -- bash -lc 'python3 -m verl.trainer.main_ppo trainer.nnodez=4'
bash <<'EOS'
python3 -m verl.trainer.main_ppo trainer.nnodez=5
EOS
python3 -m verl.trainer.main_ppo trainer.nnodez=6
"""


def test_scripts_in_strings_and_here_documents_are_read_in_place(lint):
    """`bash -c "..."`, `eval "$CMD"`, here-documents fed to bash: their launches are analysed,
    located in the file (the eval'd one where its string is written)."""
    report = lint(NESTED)
    assert [(d.code, d.span.line, d.span.col) for d in report.diagnostics] == [
        ("VL101", 3, 43),
        ("VL101", 4, 39),
        ("VL101", 7, 34),
        ("VL101", 9, 74),
        ("VL101", 11, 34),
        ("VL101", 13, 34),
    ]
    assert report.launches == 6
    again = lint(FORMS)  # the parser is left as it was: the next file parses whole
    assert again.launches == 8


def test_missing_module_or_config_dir_is_a_located_finding(lint):
    """Not an exit-2 input error that hides the rest of the file: the launch after them is analysed."""
    report = lint(
        "python3 -m verl.trainer.main_ppoo trainer.nnodes=1\n"
        "python3 -m verl.trainer.main_ppo --config-path=nowhere/conf trainer.nnodes=1\n"
        "python3 -m verl.trainer.main_ppo trainer.nnodez=1\n"
    )
    assert not report.errors
    found = {d.code: d for d in report.diagnostics}
    assert [(d.code, d.span.line, d.span.col) for d in report.diagnostics] == [
        ("VL009", 1, 12),
        ("VL106", 2, 34),
        ("VL101", 3, 34),
    ]
    assert found["VL009"].help == "did you mean `verl.trainer.main_ppo`?"
    assert "Primary config directory not found" in found["VL106"].message and found["VL106"].key == "--config-path"


def test_an_app_whose_own_config_directory_is_missing_is_a_located_finding(lint, tmp_path):
    """`@hydra.main(config_path="config")` with no such directory next to the app: Hydra stops at
    start-up whatever the script says, so the launch gets VL106 at its entry point (analysed), not
    an exit-2 input error; the next launch is still linted."""
    (tmp_path / "main_split.py").write_text(
        "import hydra\n\n\n@hydra.main(config_path='config', config_name='split', version_base=None)\ndef main(cfg):\n    pass\n"
    )
    report = lint("python3 main_split.py trainer.nnodes=1\npython3 -m verl.trainer.main_ppo trainer.nnodez=1\n")
    assert not report.errors, report.errors
    assert [(d.code, d.span.line, d.span.col) for d in report.diagnostics] == [("VL106", 1, 9), ("VL101", 2, 34)]
    assert "config_path='config' of main_split.py" in report.diagnostics[0].message and report.launches == 2


@pytest.mark.slow
def test_summary_accounts_for_unanalysed_launches_and_can_fail_on_them(tmp_path, verl_trees):
    from test_cli import cli

    s = tmp_path / "acc.sh"
    s.write_text(
        "F=$(cat f.txt) G=$(cat g.txt)\n"  # only known at run time (and assigned: no VL011)
        "python3 $F -m verl.trainer.main_ppo trainer.nnodes=1\n"
        "python3 $G -m verl.trainer.main_ppo trainer.nnodes=1\n"
        "python3 -m verl.trainer.main_ppo --config-name=$1 trainer.nnodes=1\n"
        "python3 -m verl.trainer.main_ppo trainer.nnodes=1 actor_rollout_ref.rollout.name=vllm\n"
    )
    root = str(verl_trees["0.9.1"].root)
    r = cli("check", "--verl-root", root, str(s))
    late = "an argument before it is only known at run time"
    grouped = f"launches: 1 analysed, 3 not analysable (2 {late}, 1 --config-name is only known at run time)"
    assert r.returncode == 0 and grouped in r.stdout, r.stdout
    # The same numbers for machines: the JSON report's last item, SARIF's run properties.
    *items, summary = json.loads(cli("check", "--verl-root", root, "--format", "json", str(s)).stdout)
    assert [d["code"] for d in items] == ["VL007"] * 3 and "type" not in items[0]
    assert summary == {
        "type": "summary",
        "files": {"linted": 1, "unreadable": 0, "not_analysed": 0},
        "launches": {
            "analysed": 1,
            "not_analysable": 3,
            "reasons": {late: 2, "--config-name is only known at run time": 1},
            "by_file": {str(s): {"analysed": 1, "not_analysable": 3}},
        },
    }
    sarif = json.loads(cli("check", "--verl-root", root, "--format", "sarif", str(s)).stdout)
    assert sarif["runs"][0]["properties"]["launches"] == summary["launches"]
    r = cli("check", "--verl-root", root, "--fail-on-unanalysed", str(s))
    assert r.returncode == 1 and f"{grouped}; failing (--fail-on-unanalysed)" in r.stderr
    s.write_text("python3 -m verl.trainer.main_ppo trainer.nnodes=1 actor_rollout_ref.rollout.name=vllm\n")
    r = cli("check", "--verl-root", root, "--fail-on-unanalysed", str(s))
    assert r.returncode == 0 and "not analysable" not in r.stdout
    *items, summary = json.loads(cli("check", "--verl-root", root, "--format", "json", str(s)).stdout)
    assert items == [] and summary["launches"] == {
        "analysed": 1,
        "not_analysable": 0,
        "reasons": {},
        "by_file": {str(s): {"analysed": 1, "not_analysable": 0}},
    }


# Launch forms real scripts use, each file with the entry-point lines a plain regex finds
# (bench/coverage.py's count, independent of verl-lint's bash front end).
PROJECT_FORMS = {
    "torchrun.sh": "N=8\ntorchrun --nnodes=1 --nproc_per_node=$N -m verl.trainer.main_ppo trainer.nnodes=1\n"
    "torchrun --nproc_per_node=$UNSET --master_port $PORT -m verl.trainer.main_ppo trainer.nnodes=1\n",
    "ray.sh": "ray job submit --address=http://127.0.0.1:8265 -- VLLM_LOGGING_LEVEL=INFO python3 -m verl.trainer.main_ppo trainer.nnodes=1\n",
    "env_prefix.sh": "HYDRA_FULL_ERROR=1 ENV=1 python3 -m verl.trainer.main_ppo trainer.nnodes=1 2>&1 | tee log.txt\n",
    "strings.sh": 'bash -c "python3 -m verl.trainer.main_ppo trainer.nnodes=1"\n'
    "bash <<EOF\npython3 -m verl.trainer.main_ppo trainer.nnodes=1\nEOF\n",
    "launchers.sh": "srun -N 2 --gres=gpu:8 python3 -m verl.trainer.main_ppo trainer.nnodes=1 &\n"
    "apptainer exec --nv img.sif python3 -m verl.trainer.main_ppo trainer.nnodes=1\nwait\n",
    "eval.sh": 'CMD="python3 -m verl.trainer.main_ppo trainer.nnodes=1"\neval "$CMD"\n'
    'PLAIN="python3 -m verl.trainer.main_ppo trainer.nnodes=2"\neval $PLAIN\n',
    "functions.sh": "train() {\n    python3 -m verl.trainer.main_ppo trainer.nnodes=$1\n}\ntrain 1\n"
    "unused() {\n    python3 -m verl.trainer.main_ppo trainer.nnodes=1\n}\n",
    "branches.sh": 'if [ "$MODE" = a ]; then\n    python3 -m verl.trainer.main_ppo trainer.nnodes=1\nelse\n'
    '    python3 -m verl.trainer.main_ppo trainer.nnodes=2\nfi\ncase "$2" in\n  x) python3 -m verl.trainer.main_ppo trainer.nnodes=3 ;;\nesac\n',
    # An array the branches extend differently still names its program.
    "array.sh": 'cmd=(python3 -m verl.trainer.main_ppo trainer.nnodes=1)\nif [ "$Q" = 1 ]; then\n    cmd+=(trainer.nnodes=2)\nfi\n"${cmd[@]}"\n',
    # Not analysable, and said so: run from a command substitution's output, or with a config only the caller knows.
    "unseen.sh": 'job=$(cat <<EOF\npython3 -m verl.trainer.main_ppo trainer.nnodes=1\nEOF\n)\nsrun bash -c "$job"\n'
    "python3 -m verl.trainer.main_ppo --config-name=$1 trainer.nnodes=1\n",
    # Not launches: printed, commented out, a data script.
    "quiet.sh": "echo python3 -m verl.trainer.main_ppo\n# python3 -m verl.trainer.main_ppo trainer.nnodes=1\npython3 prepare.py\n",
}


def test_every_launch_form_is_counted_like_an_independent_regex(tmp_path, verl_trees):
    """bench/coverage.py on scripts written here: per script, analysed + VL007 equals the
    regex's count of entry-point lines, no script dropped, every tracked script linted."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for name, text in PROJECT_FORMS.items():
        (repo / name).write_text("#!/bin/bash\n" + text)
    (repo / "untracked.sh").write_text("python3 -m verl.trainer.main_ppo trainer.nnodes=1\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", *PROJECT_FORMS], cwd=repo, check=True)
    bench = Path(__file__).resolve().parents[1] / "bench" / "coverage.py"
    root = str(verl_trees["0.9.1"].root)
    r = subprocess.run(
        [sys.executable, str(bench), str(repo), "--verl-root", root, "--json"], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)["repo"]
    # 18 entry-point lines; the untracked script is linted (verl-lint walks the tree) but not tracked.
    assert (row["scripts_git"], row["scripts_linted"], row["entry_lines"]) == (
        len(PROJECT_FORMS),
        len(PROJECT_FORMS) + 1,
        18,
    )
    assert (row["analysed"], row["not_analysable"], row["dropped"]) == (16 + 1, 2, 0), r.stdout
    assert row["reasons"] == {
        "verl-lint did not see this line run as a command": 1,
        "--config-name is only known at run time": 1,
    }
    r = subprocess.run([sys.executable, str(bench), str(repo), "--verl-root", root], capture_output=True, text=True)
    assert r.stdout.splitlines()[:1] == ["linted but not tracked: untracked.sh"], r.stdout
    assert "untracked.sh: 0 entry-point lines, verl-lint: 1 analysed" in r.stdout  # the only script where they differ
    assert "| repo | 11 | 12 | 18 | 17 (89.5%) | 2 | 0 |" in r.stdout


def test_hydras_warnings_about_the_users_config_do_not_reach_the_terminal(tmp_path, verl_trees):
    """Hydra warns `Defaults list is missing _self_` while composing a user's config: that is
    about their config, not verl-lint's output, so it is not printed (RAGEN's configs did)."""
    from test_cli import cli

    (tmp_path / "conf" / "extra").mkdir(parents=True)
    (tmp_path / "conf" / "my.yaml").write_text("defaults:\n  - extra: a\nx: 1\n")
    (tmp_path / "conf" / "extra" / "a.yaml").write_text("y: 2\n")
    s = tmp_path / "run.sh"
    s.write_text(f"python3 -m verl.trainer.main_ppo --config-path={tmp_path / 'conf'} --config-name=my x=2\n")
    r = cli("check", "--verl-root", str(verl_trees["0.9.1"].root), "--no-cache", str(s))
    assert r.returncode == 0 and all(
        line.startswith("verl-lint: indexing verl tree") for line in r.stderr.splitlines()
    ), r.stderr  # only the cold-index note
    assert r.stdout == "All clean: 1 script linted, 1 launch\n"


def test_launch_forms_that_were_dropped_are_analysed_or_say_why(lint):
    report = lint(
        "cmd=(python3 -m verl.trainer.main_ppo trainer.nnodez=1)\n"  # 1: the array's program is known in every branch
        'if [ "$Q" = 1 ]; then cmd+=(trainer.nnodes=2); fi\n'
        '"${cmd[@]}"\n'
        'PLAIN="python3 -m verl.trainer.main_ppo trainer.nnodez=2"\n'  # 4: eval of plain words
        "eval $PLAIN\n"
        'QUOTED="python3 -m verl.trainer.main_ppo trainer.nnodez=\'\\"1\\"\'"\n'  # 6: eval parses the quotes again
        "eval $QUOTED\n"
        "job=$(cat <<EOF\n"
        "python3 -m verl_tool.trainer.main_ppo trainer.nnodes=1\n"  # 9: a project's own trainer, in a here-document
        "EOF\n"
        ")\n"
        'bash -c "$job"\n'
        "python3 -m verl.trainer.main_ppo --config-name=$1 trainer.nnodes=1\n"  # 13: not composed with the default config
    )
    found = [(d.code, d.span.line) for d in report.diagnostics]
    assert found == [("VL101", 1), ("VL101", 4), ("VL101", 6), ("VL007", 9), ("VL007", 13)], report.diagnostics
    why = {d.span.line: d.message for d in report.diagnostics if d.code == "VL007"}
    assert why[9].endswith(
        "verl_tool.trainer.main_ppo is named here, but verl-lint did not see this line run as a command"
    )
    assert "--config-name is only known at run time (script argument $1)" in why[13]
    assert report.launches == 3


def test_an_entry_point_kept_in_a_variable_is_the_launch_it_reaches(lint):
    """`ENTRY="-m ..."` joined into `CMD="torchrun ... ${ENTRY}"`, run as `$CMD`: the launch is
    analysed, and the line naming the entry point is that launch's, not an unseen one. The other
    branch's entry point reaches `$CMD` only when that branch is taken (verl's own
    run_sft_engine.sh): the script is evaluated again with it taken, and its findings say so."""
    report = lint(
        "mode=${mode:-spmd}\n"
        'if [ "$mode" = spmd ]; then\n'
        '  ENTRY=${ENTRY:-"-m verl.trainer.sft_trainer"}\n'
        '  CMD="torchrun --standalone --nproc-per-node=${N:-1} ${ENTRY}"\n'
        "else\n"
        '  ENTRY=${ENTRY:-"-m verl.trainer.sft_trainer_ray"}\n'
        '  CMD="python3 ${ENTRY}"\n'
        "fi\n"
        "$CMD trainer.nnodez=1\n"
        'if [ "$mode" != spmd ]; then\n'
        '  ENTRY="-m verl.trainer.main_ppo"\n'  # not taken either, and no later command runs it
        "fi\n"
    )
    found = [
        (
            d.code,
            d.span.line,
            d.message.endswith("(in the branch at line 5, which the script's own values do not take)"),
        )
        for d in report.diagnostics
    ]
    assert found == [("VL101", 9, False), ("VL101", 9, True), ("VL007", 11, False)], report.diagnostics
    assert report.launches == 2
