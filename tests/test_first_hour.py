"""What a new user trips on in the first hour (issue #36): a project with its own Hydra config,
its docs and a pre-commit hook, linted in process with the command line's own `main` against a
real verl release."""

from __future__ import annotations

import json
import re

import pytest
from conftest import NEWEST, OLDER, json_findings

from verl_lint.cli import main
from verl_lint.runner import forget_config_files

PRIMARY = """\
hydra:
  searchpath:
    - pkg://verl.trainer.config
defaults:
  - ppo_trainer
  - _self_

actor_rollout_ref:
  actor:
    optim:
      warmup_style: cosine
  rollout:
    name: vllm
"""

LAUNCH = """\
#!/bin/bash
python3 -m verl.trainer.main_ppo --config-path=$(pwd)/config --config-name=my_grpo \\
    data.train_files=$HOME/data/train.parquet \\
    actor_rollout_ref.rollout.tensor_model_paralel_size=2 \\
    trainer.n_gpus_per_node=8
"""


@pytest.fixture
def project(tmp_path, monkeypatch, verl_trees):
    """A project (run.sh + config/my_grpo.yaml) in the working directory; returns its verl flags."""
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "my_grpo.yaml").write_text(PRIMARY)
    (tmp_path / "run.sh").write_text(LAUNCH)
    monkeypatch.chdir(tmp_path)
    return ["--verl-root", str(verl_trees[NEWEST].root), "--no-cache"]


def test_fixes_in_yaml_files_are_counted_listed_and_a_single_did_you_mean_is_an_unsafe_rename(
    project, tmp_path, capsys
):
    assert main(["check", ".", *project]) == 1
    out = capsys.readouterr().out
    assert out.endswith("1 fixable with --fix (1 more with --unsafe-fixes)\n"), out
    main(["check", ".", *project, "--show-fixes", "--unsafe-fixes"])
    listed = capsys.readouterr().out.splitlines()
    assert (
        "  config/my_grpo.yaml:11:7: VL418 rename `warmup_style` to `lr_scheduler_type` in config/my_grpo.yaml"
        in listed
    )
    assert (
        "  run.sh:4:5: VL101 rename `actor_rollout_ref.rollout.tensor_model_paralel_size` to "
        "`actor_rollout_ref.rollout.tensor_model_parallel_size` (unsafe)" in listed
    ), listed
    assert main(["check", ".", *project, "--fix"]) == 1  # the safe one only: the typo stays
    assert "lr_scheduler_type: cosine" in (tmp_path / "config" / "my_grpo.yaml").read_text()
    assert "tensor_model_paralel_size" in (tmp_path / "run.sh").read_text()
    capsys.readouterr()
    # Linted again after the fix: the config file as it now is, not the composition made before.
    assert main(["check", ".", *project, "--fix", "--unsafe-fixes"]) == 0
    assert "All clean: 1 script linted, 1 launch" in capsys.readouterr().out
    assert "tensor_model_parallel_size=2" in (tmp_path / "run.sh").read_text()


def test_diff_with_nothing_to_fix_says_so(project, tmp_path, capsys):
    (tmp_path / "run.sh").write_text(LAUNCH.replace("paralel", "parallel"))
    (tmp_path / "config" / "my_grpo.yaml").write_text(PRIMARY.replace("warmup_style", "lr_scheduler_type"))
    assert main(["check", ".", *project, "--diff"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.splitlines()[-1] == "No fixes available to show"


def test_upgrade_defaults_to_the_current_directory_as_check_does(project, capsys):
    assert main(["upgrade", "--from", OLDER, "--to", NEWEST, "--no-cache"]) == 0  # a warning only
    out = capsys.readouterr().out
    assert "config/my_grpo.yaml:11:7: VL418" in out  # deprecated since 0.9.x, found under `.`
    assert "VL101" not in out  # the typo is the same on both releases: not a change


def test_run_names_files_relative_to_the_working_directory_as_check_does(project, tmp_path, capsys):
    assert main(["run", *project, "--dry-run", "--", "bash", str(tmp_path / "run.sh")]) == 1
    err = capsys.readouterr().err
    assert "\nrun.sh:4:5: VL101" in "\n" + err and "config/my_grpo.yaml:11:7: VL418" in err
    assert "(run.sh:2:12)" in err and str(tmp_path) not in err.split("would not run:")[0], (
        err
    )  # the command is quoted as given


def test_the_working_directory_assumed_is_said_once_per_file(project, tmp_path, capsys):
    (tmp_path / "run.sh").write_text(
        LAUNCH.replace("    trainer.n_gpus_per_node=8", "    trainer.n_gpus_per_node=8 trainer.nnodez=2")
    )
    main(["check", ".", *project, "--format", "json"])
    found = json_findings(capsys.readouterr().out)
    assert [f["code"] for f in found] == ["VL418", "VL101", "VL101"], found
    note = "(assuming the script runs from its own directory, where config is; pass --cwd to say)"
    assert [note in f["message"] for f in found] == [True, False, False]


def test_nothing_analysed_is_not_no_findings(tmp_path, monkeypatch, capsys):
    """No verl to lint against (none installed, no checkout, no flag): the summary says nothing
    could be analysed, and why, not "No findings"."""
    from verl_lint.launch.locate import installed_tree

    if installed_tree() is not None:
        pytest.skip("verl is installed in this environment: it would be linted against")
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "my_grpo.yaml").write_text(PRIMARY)
    (tmp_path / "run.sh").write_text(LAUNCH)
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--no-cache"]) == 2
    summary = capsys.readouterr().out.splitlines()[-2]
    assert summary.startswith(
        "Nothing could be analysed in 2 files: module verl.trainer.main_ppo not found: no verl tree found"
    ), summary
    assert summary.endswith("pass --verl VERSION, --verl-root DIR or set verl-version in [tool.verl-lint]")


def test_a_primary_config_cut_by_the_time_limit_is_reported_at_the_config_file(project, monkeypatch, capsys):
    """The launch a primary config is linted as is cut by the time limit (a hang, injected: the
    limit's own firing is tested in test_limits.py): VL005 at the config file's first line (not
    at a `.my_grpo.yaml.launch` that does not exist), counted as a launch cut, not a file unread."""
    from verl_lint import pipeline
    from verl_lint.limits import Timeout

    def hang(*args, **kwargs):
        raise Timeout()

    monkeypatch.setattr(pipeline, "launch_findings", hang)
    assert main(["check", "config/my_grpo.yaml", *project]) == 1
    out = capsys.readouterr().out
    assert out.startswith(
        "config/my_grpo.yaml:1:1: VL005 [error] this launch was not analysed: analysing it took longer than 20 s"
    ), out
    assert ".launch" not in out and "could not be read" not in out
    assert "launches: 0 analysed, 0 not analysable, 1 cut by a limit (VL005)\n" in out
    main(["check", "config/my_grpo.yaml", *project, "--format", "json"])
    summary = json.loads(capsys.readouterr().out)[-1]
    assert (
        summary["files"] == {"linted": 1, "unreadable": 0, "not_analysed": 1} and summary["launches"]["over_limit"] == 1
    )


def test_a_primary_config_without_verls_search_path_is_told_to_add_it(project, tmp_path, capsys):
    (tmp_path / "config" / "my_grpo.yaml").write_text(
        PRIMARY.replace("hydra:\n  searchpath:\n    - pkg://verl.trainer.config\n", "")
    )
    assert main(["check", ".", *project, "--format", "json"]) == 1
    found = json_findings(capsys.readouterr().out)
    assert [(f["path"], f["line"], f["column"], f["code"]) for f in found] == [
        ("run.sh", 2, 12, "VL106"),
        ("config/my_grpo.yaml", 2, 5, "VL106"),
    ]
    for f in found:
        assert "Could not load 'ppo_trainer'" in f["message"] and "one of verl's configs" in f["message"]
        assert (
            f["help"]
            == "add `hydra: {searchpath: [pkg://verl.trainer.config]}` to config/my_grpo.yaml (beside its defaults list)"
        )
    assert [(r["path"], r["line"], r["column"]) for r in found[0]["related"]] == [("config/my_grpo.yaml", 2, 5)]
    # With the search path (the fixture's config), it composes (a new process would compose it again).
    (tmp_path / "config" / "my_grpo.yaml").write_text(PRIMARY)
    forget_config_files()
    main(["check", ".", *project, "--format", "json"])
    assert "VL106" not in {f["code"] for f in json_findings(capsys.readouterr().out)}


def test_the_pre_commit_hook_runs_on_the_configs_docs_and_workflows_a_commit_changes(project, tmp_path, capsys):
    """pre-commit passes every changed file of the hook's types: a config group file with a bad key
    fails the commit (through the primary config above it); a YAML or doc with no launch passes."""
    import shlex

    import yaml
    from conftest import EXAMPLES

    [hook] = yaml.safe_load((EXAMPLES.parent / ".pre-commit-hooks.yaml").read_text())
    assert {"shell", "yaml", "markdown", "rst"} <= set(hook["types_or"]) and "types" not in hook
    entry = shlex.split(hook["entry"])
    assert entry[:2] == ["verl-lint", "check"]
    primary = PRIMARY.replace("warmup_style", "lr_scheduler_type")  # the primary itself is clean
    (tmp_path / "config" / "my_grpo.yaml").write_text(
        primary.replace("  - _self_", "  - override rollout@actor_rollout_ref.rollout: my_rollout\n  - _self_")
    )
    (tmp_path / "config" / "rollout").mkdir()
    group = tmp_path / "config" / "rollout" / "my_rollout.yaml"
    group.write_text("defaults:\n  - rollout\n  - _self_\nname: vllm\ntensor_parallel_size: 2\n")
    (tmp_path / "values.yaml").write_text("foo: 1\n")
    (tmp_path / "NOTES.md").write_text("# notes\n\nno launch here\n")
    changed = ["config/rollout/my_rollout.yaml", "values.yaml", "NOTES.md"]
    assert main([*entry[1:], *project, "--format", "json", *changed]) == 1
    found = json_findings(capsys.readouterr().out)
    assert [(f["path"], f["line"], f["code"]) for f in found] == [("config/rollout/my_rollout.yaml", 5, "VL110")], found
    group.write_text("defaults:\n  - rollout\n  - _self_\nname: vllm\ntensor_model_parallel_size: 2\n")
    forget_config_files()
    assert main([*entry[1:], *project, *changed]) == 0
    # Without the flag a named file with no launch is an input error, as before.
    assert main(["check", *project, "values.yaml"]) == 2


@pytest.mark.parametrize("version, expected", [(NEWEST, set()), pytest.param(OLDER, {"VL607"}, marks=pytest.mark.slow)])
def test_the_callback_and_the_cli_judge_the_engine_from_the_same_evidence(lint, verl_trees, version, expected):
    """vLLM not installed: both read the release the verl tree declares (0.9.1 pins vllm==0.24.0,
    whose allocator no longer asserts; 0.7.1 allows 0.8.5-0.12.0, which all do), neither says no
    vLLM version is known (VL010)."""
    from hydra import compose, initialize_config_dir

    from verl_lint.environment import installed_versions
    from verl_lint.live import lint_config

    if installed_versions().get("vllm"):
        pytest.skip("vLLM is installed here: both would use it")
    overrides = ["actor_rollout_ref.rollout.name=vllm", "trainer.n_gpus_per_node=8"]
    script = (
        "#!/bin/bash\nexport PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\npython3 -m verl.trainer.main_ppo "
        + " ".join(overrides)
        + "\n"
    )
    report = lint(script, version)
    cli = {d.code for d in report.diagnostics} & {"VL607", "VL010"}
    tree = verl_trees[version].root
    with initialize_config_dir(config_dir=str(tree / "verl" / "trainer" / "config"), version_base=None):
        cfg = compose("ppo_trainer", overrides=overrides)  # what Hydra hands the callback (its job config)
    main_ppo = str(tree / "verl" / "trainer" / "main_ppo.py")
    live = lint_config(
        cfg,
        overrides,
        {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
        task_file=main_ppo,
        config_name="ppo_trainer",
        argv=[],
    )
    assert cli == {d.code for d in live} & {"VL607", "VL010"} == expected, (cli, [(d.code, d.message) for d in live])


def test_config_prints_interpolations_resolved_and_run_time_values_as_written(project, capsys):
    assert main(["config", "run.sh", *project[:2], "--key", "actor_rollout_ref.rollout.n_gpus_per_node"]) == 0
    [_, line] = capsys.readouterr().out.splitlines()
    assert re.fullmatch(
        r"actor_rollout_ref\.rollout\.n_gpus_per_node: 8 +# script, line 5, via trainer\.n_gpus_per_node", line
    ), line
    main(["config", "run.sh", *project[:2], "--key", "data.train_files"])
    [_, line] = capsys.readouterr().out.splitlines()
    assert re.fullmatch(
        r"data\.train_files: \$HOME/data/train\.parquet +# script, line 3, known at run time: \$HOME is not set in the script \(comes from the environment\)",
        line,
    ), line
    # For machines: the value as the config holds it, and what the text shows.
    main(["config", "run.sh", *project[:2], "--format", "json"])
    values = json.loads(capsys.readouterr().out)[0]["values"]
    assert values["actor_rollout_ref.rollout.n_gpus_per_node"] == {
        "value": "${oc.select:trainer.n_gpus_per_node,8}",
        "origin": "script, via trainer.n_gpus_per_node",
        "line": 5,
        "resolved": 8,
    }
    assert (
        values["data.train_files"]["value"] == "???"
        and values["data.train_files"]["written"] == "$HOME/data/train.parquet"
    )
