"""A project's own Hydra config files are judged like the script: each value they choose is
located at its file:line:col, verl's defaults (and a copy restating them) stay silent, and a file
shared by many launches gets one finding. Real composition against real verl releases."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import NEWEST, OLDER, OLDEST, across_releases

from verl_lint.model import Severity
from verl_lint.runner import lint_paths
from verl_lint.runs import Options

PRIMARY = """\
# my GRPO settings
hydra:
  searchpath:
    - pkg://verl.trainer.config

defaults:
  - ppo_trainer
  - _self_

algorithm:
  adv_estimator: grpo
  kl_ctrl:
    kl_coef: {kl_coef}
{in_reward}
actor_rollout_ref:
  rollout:
    name: vllm
    {tp_key}: 2
{engine_kwargs}"""

TYPO_KWARG = "    engine_kwargs:\n      vllm:\n        enable_expert_parallel: true\n"
LAUNCH = "#!/bin/bash\npython3 -m verl.trainer.main_ppo --config-path=$(pwd)/config --config-name=my_grpo \\\n    data.train_files=/data/train.parquet {extra}\n"

# What each release makes of the issue's example (all located in the YAML file): the KL
# coefficient with the KL penalty off; the rollout key typo, which 0.7+ builds into RolloutConfig
# (0.5.0 builds no dataclass, and its vendored vLLM has a `tensor_parallel_size` parameter, so
# the name counts as read there); the expert-parallel flag verl overwrites (0.9.1) or sets itself
# only with expert parallelism (0.7.1).
EXPECTED = {
    NEWEST: {(13, 5, "VL233"), (18, 5, "VL110"), (21, 9, "VL703")},
    OLDER: {(13, 5, "VL233"), (18, 5, "VL110"), (21, 9, "VL704")},
    OLDEST: {(13, 5, "VL233")},
}


def _project(where, monkeypatch, extra="", **fields):
    """The project in a directory of its own: a process composes each config once (by its path)."""
    values = dict(kl_coef="0.01", in_reward="", tp_key="tensor_parallel_size", engine_kwargs=TYPO_KWARG) | fields
    (where / "config").mkdir(parents=True)
    (where / "config" / "my_grpo.yaml").write_text(PRIMARY.format(**values))
    (where / "run.sh").write_text(LAUNCH.format(extra=extra))
    monkeypatch.chdir(where)  # config paths are shown relative to where verl-lint runs


def _findings(tmp_path, verl_trees, version, *scripts):
    """The findings of linting `scripts` (run.sh) in tmp_path, the working directory, in one run."""
    reports = lint_paths(
        [Path(s) for s in scripts or ("run.sh",)], Options(verl_tree=verl_trees[version]), use_cache=False
    )
    assert not any(r.errors for r in reports), [r.errors for r in reports]
    return [d for r in reports for d in r.diagnostics]


@pytest.mark.parametrize("version", across_releases())
def test_the_issue_example_is_reported_at_its_yaml_lines_and_clean_once_fixed(
    tmp_path, monkeypatch, verl_trees, version
):
    _project(tmp_path / "bad", monkeypatch)
    found = [d for d in _findings(tmp_path, verl_trees, version) if d.severity >= Severity.WARNING]
    assert {(d.span.line, d.span.col, d.code) for d in found} == EXPECTED[version], [
        (d.code, d.span, d.message) for d in found
    ]
    assert {d.span.path for d in found} == {"config/my_grpo.yaml"}
    # Each names the launch that composes the file.
    assert all(any(r.span.path == "run.sh" and r.span.line == 2 for r in d.related) for d in found), found

    fixed = dict(tp_key="tensor_model_parallel_size", engine_kwargs="", in_reward="  use_kl_in_reward: true\n")
    _project(tmp_path / "fixed", monkeypatch, **fixed)
    found = [d for d in _findings(tmp_path, verl_trees, version) if d.severity >= Severity.WARNING]
    assert not found, [(d.code, d.span, d.message) for d in found]


def test_a_value_restating_verls_default_is_no_choice(tmp_path, monkeypatch, verl_trees):
    """verl's own kl_coef (0.001) written again in the project's file is not judged; another value is."""
    _project(tmp_path / "same", monkeypatch, kl_coef="0.001", tp_key="tensor_model_parallel_size", engine_kwargs="")
    assert not _findings(tmp_path, verl_trees, NEWEST)
    _project(tmp_path / "other", monkeypatch, kl_coef="0.002", tp_key="tensor_model_parallel_size", engine_kwargs="")
    assert [(d.code, d.span.line) for d in _findings(tmp_path, verl_trees, NEWEST)] == [("VL233", 13)]


def test_a_copy_of_verls_config_is_judged_only_where_it_differs(tmp_path, monkeypatch, verl_trees):
    """A project config dir holding its own `ppo_trainer.yaml` (verl's, copied and edited) replaces
    verl's: the values it shares with verl's file of the same name are verl's defaults."""
    shipped = verl_trees[NEWEST].root / "verl" / "trainer" / "config"
    conf = tmp_path / "config"
    conf.mkdir()
    for f in shipped.rglob("*.yaml"):
        target = conf / f.relative_to(shipped)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f.read_text())
    algo = (conf / "ppo_trainer.yaml").read_text()
    assert "  kl_ctrl:\n" in algo
    (conf / "ppo_trainer.yaml").write_text(algo.replace("    kl_coef: 0.001", "    kl_coef: 0.05", 1))
    (tmp_path / "run.sh").write_text(
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo --config-path=$(pwd)/config actor_rollout_ref.rollout.name=vllm\n"
    )
    monkeypatch.chdir(tmp_path)
    found = _findings(tmp_path, verl_trees, NEWEST)
    line = 1 + algo[: algo.index("    kl_coef: 0.001")].count("\n")
    assert [(d.code, d.span.path, d.span.line) for d in found if d.severity >= Severity.WARNING] == [
        ("VL233", "config/ppo_trainer.yaml", line)
    ]


def test_a_file_shared_by_launches_is_reported_once_and_says_for_which(tmp_path, monkeypatch, verl_trees):
    _project(tmp_path, monkeypatch, tp_key="tensor_model_parallel_size", engine_kwargs="")
    (tmp_path / "again.sh").write_text(LAUNCH.format(extra=""))
    [one] = _findings(tmp_path, verl_trees, NEWEST, "run.sh", "again.sh")
    assert (one.code, one.span.line, one.span.col) == ("VL233", 13, 5) and "(for the launch" not in one.message
    # A third launch that turns the KL penalty on: the value has an effect there.
    (tmp_path / "on.sh").write_text(LAUNCH.format(extra="algorithm.use_kl_in_reward=True"))
    [one] = _findings(tmp_path, verl_trees, NEWEST, "run.sh", "again.sh", "on.sh")
    assert one.message.endswith(
        "(for the launch at again.sh:2, run.sh:2; not for the 1 other launch this value reaches)"
    ), one.message


# ------------------------------------------------------ files other than scripts ----


def _cli(cwd, verl_trees, *args):
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "verl_lint.cli",
            "check",
            *args,
            "--verl-root",
            str(verl_trees[NEWEST].root),
            "--output-format",
            "json",
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    assert p.returncode in (0, 1), p.stderr
    *found, summary = json.loads(p.stdout)
    return [(f["path"], f["line"], f["column"], f["code"]) for f in found], summary


@pytest.mark.slow
def test_a_primary_config_is_linted_on_its_own_once_and_as_the_launch_that_uses_it(tmp_path, monkeypatch, verl_trees):
    _project(tmp_path, monkeypatch)
    bad = {("config/my_grpo.yaml", line, col, code) for line, col, code in EXPECTED[NEWEST]}
    # The config alone: as the launch the project's script makes of it, said in the summary.
    found, summary = _cli(tmp_path, verl_trees, "config/my_grpo.yaml")
    assert set(found) == bad and len(found) == 3, found
    assert summary["configs"] == {
        "config/my_grpo.yaml": "linted as the primary config of `python3 -m verl.trainer.main_ppo` (as run.sh launches it)"
    }
    # The whole project: the script composes the config, so each finding comes once, from there.
    found, summary = _cli(tmp_path, verl_trees, ".")
    assert sorted(found) == sorted(bad) and "configs" not in summary and summary["launches"]["analysed"] == 1
    # A primary config no script uses is linted on its own, with verl's default entry point; a
    # group file (its defaults are `group@package: name`) is not a primary config.
    (tmp_path / "run.sh").unlink()
    (tmp_path / "config" / "actor").mkdir()
    (tmp_path / "config" / "actor" / "mine.yaml").write_text(
        "defaults:\n  - dp_actor@_here_\n  - _self_\nclip_ratio: 0.3\n"
    )
    found, summary = _cli(tmp_path, verl_trees, ".")
    assert set(found) == bad and list(summary["configs"]) == ["config/my_grpo.yaml"], (found, summary)
    assert "verl's default entry point" in summary["configs"]["config/my_grpo.yaml"]


DOC = """\
# Quick start

```bash
python3 -m verl.trainer.main_ppo \\
    actor_rollout_ref.rollout.name=vllm \\
    data.train_batch_sizee=64 \\
    ...
```

Output:

```text
python3 -m verl.trainer.main_ppo data.not_a_key=1
```

Add these lines to your script (a fragment, not a command):

```bash
actor_rollout_ref.rollout.enforce_eager=False \\
trainer.nnodez=1
```
"""

RST = """\
Run it
======

.. code-block:: bash

   $ python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm trainer.nnodez=1
"""

WORKFLOW = """\
name: e2e
on: [push]
jobs:
  train:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm trainer.nnodez=1
      - name: two
        run: |
          export N=2
          python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm \\
            trainer.nnodes=$N trainer.save_freqq=5
"""

SKYPILOT = """\
resources:
  accelerators: A100:8
setup: |
  pip install verl
run: |
  python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm data.max_prompt_lenght=512
"""


@pytest.mark.parametrize(
    "name, text, expected",
    [
        (
            "docs/quickstart.md",
            DOC,
            [(6, 5, "VL101")],
        ),  # `...` stands for more; the text block and the fragment are not commands
        ("docs/start.rst", RST, [(6, 75, "VL101")]),  # the `$ ` prompt is not part of the command
        (".github/workflows/e2e.yml", WORKFLOW, [(8, 83, "VL101"), (13, 31, "VL101")]),
        ("sky/train.yaml", SKYPILOT, [(6, 72, "VL101")]),
    ],
)
def test_launches_written_in_docs_and_workflows_are_located_in_them(
    tmp_path, monkeypatch, verl_trees, name, text, expected
):
    path = tmp_path / name
    path.parent.mkdir(parents=True)
    path.write_text(text)
    monkeypatch.chdir(tmp_path)
    [report] = lint_paths([Path(name)], Options(verl_tree=verl_trees[NEWEST]), use_cache=False)
    assert not report.errors and report.text == text
    assert [(d.span.line, d.span.col, d.code) for d in report.diagnostics if d.span.path == name] == expected, (
        report.diagnostics
    )
    assert report.launches == len(expected) and not any(d.related for d in report.diagnostics)


GLOBS = """\
# Train

```bash
python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm \\
    trainer.logger=['console','wandb'] \\
    'trainer.project_name=[x]' data.max_prompt_length=512 "trainer.experiment_name=a*" data/*.parquet
```
"""


@pytest.mark.parametrize(
    "name, text, expected",
    [
        ("docs/quickstart.md", GLOBS, [(5, 5, "VL013", "warning")]),
        ("train.zsh", "#!/bin/zsh\n" + GLOBS.split("```")[1].removeprefix("bash\n"), [(3, 5, "VL013", "error")]),
        ("train.sh", "#!/usr/bin/env zsh\n" + GLOBS.split("```")[1].removeprefix("bash\n"), [(3, 5, "VL013", "error")]),
        ("run.sh", "#!/bin/bash\n" + GLOBS.split("```")[1].removeprefix("bash\n"), []),  # bash passes it on
    ],
)
def test_an_unquoted_glob_is_reported_where_zsh_reads_it(tmp_path, monkeypatch, verl_trees, name, text, expected):
    """zsh stops a command on a pattern that matches no file (`no matches found`): a doc's block is
    pasted into the reader's shell, a zsh script runs in zsh; quoted words are not patterns."""
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    monkeypatch.chdir(tmp_path)
    [report] = lint_paths([Path(name)], Options(verl_tree=verl_trees[NEWEST]), use_cache=False)
    found = [
        (d.span.line, d.span.col, d.code, d.severity.name.lower()) for d in report.diagnostics if d.code == "VL013"
    ]
    assert found == expected, report.diagnostics
    if found:
        [d] = [d for d in report.diagnostics if d.code == "VL013"]
        assert d.help == "quote the whole override: 'trainer.logger=[console,wandb]'"


RENAMED = """\
hydra:
  searchpath:
    - pkg://verl.trainer.config
defaults:
  - ppo_trainer
  - _self_
actor_rollout_ref:
  actor:
    optim:
      warmup_style: cosine  # the schedule
{also}"""


@pytest.mark.slow
def test_fix_renames_a_deprecated_key_in_its_yaml_file_keeping_comments(tmp_path, verl_trees):
    (tmp_path / "config").mkdir()
    conf = tmp_path / "config" / "my.yaml"
    conf.write_text(RENAMED.format(also=""))
    (tmp_path / "run.sh").write_text(
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo --config-path=$(pwd)/config --config-name=my actor_rollout_ref.rollout.name=vllm\n"
    )
    found, _ = _cli(tmp_path, verl_trees, ".")
    assert found == [("config/my.yaml", 10, 7, "VL418")], found
    fixed = subprocess.run(
        [sys.executable, "-m", "verl_lint.cli", "check", ".", "--verl-root", str(verl_trees[NEWEST].root), "--fix"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert conf.read_text() == RENAMED.format(also="").replace(
        "warmup_style: cosine  # the schedule", "lr_scheduler_type: cosine  # the schedule"
    ), fixed.stderr
    assert fixed.returncode == 0 and "Fixed 1 finding in 1 file" in fixed.stderr, fixed.stderr
    # verl's default written beside it: the rename would give the mapping the key twice.
    conf.write_text(RENAMED.format(also="      lr_scheduler_type: constant\n"))
    refused = subprocess.run(
        [sys.executable, "-m", "verl_lint.cli", "check", ".", "--verl-root", str(verl_trees[NEWEST].root), "--fix"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert "config/my.yaml: fix skipped: the fixed file would not parse the same way" in refused.stderr, refused.stderr
    assert conf.read_text() == RENAMED.format(also="      lr_scheduler_type: constant\n")


# The layout the README recommends: a project config whose only content is verl's defaults list.
ONLY_DEFAULTS = "hydra:\n  searchpath:\n    - pkg://verl.trainer.config\ndefaults:\n  - ppo_trainer\n  - _self_\n"
SIZES = (
    "data.train_batch_size=60 actor_rollout_ref.actor.ppo_mini_batch_size=64 actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=3 "
    "actor_rollout_ref.actor.ppo_micro_batch_size=8 actor_rollout_ref.rollout.tensor_model_parallel_size=3 "
    "trainer.n_gpus_per_node=8 trainer.nnodes=1"
)


@pytest.mark.parametrize("version", across_releases())
def test_a_config_with_its_own_name_gets_every_rule_ppo_trainer_gets(tmp_path, monkeypatch, verl_trees, version):
    """Rules apply by what the composed config contains: `--config-name=my_grpo` composing
    ppo_trainer gives the findings the same overrides give on ppo_trainer itself."""
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "my_grpo.yaml").write_text(ONLY_DEFAULTS)
    name = "" if version == OLDEST else "actor_rollout_ref.rollout.name=vllm "
    module = "python3 -m verl.trainer.main_ppo"
    (tmp_path / "mine.sh").write_text(
        f"#!/bin/bash\n{module} --config-path=$(pwd)/config --config-name=my_grpo {name}{SIZES}\n"
    )
    (tmp_path / "plain.sh").write_text(
        f"#!/bin/bash\n{module} {' ' * len('--config-path=$(pwd)/config --config-name=my_grpo ')}{name}{SIZES}\n"
    )
    monkeypatch.chdir(tmp_path)
    found = _findings(tmp_path, verl_trees, version, "mine.sh", "plain.sh")
    by_file = {
        f: sorted((d.code, d.span.line, d.span.col, d.key) for d in found if d.span.path.endswith(f))
        for f in ("mine.sh", "plain.sh")
    }
    assert by_file["mine.sh"] == by_file["plain.sh"]
    assert {"VL301", "VL302", "VL303"} <= {c for c, *_ in by_file["mine.sh"]}, by_file


def test_rules_verified_on_main_ppo_say_once_that_another_verl_app_was_not_judged(tmp_path, monkeypatch, verl_trees):
    """An ineffective-key record describes main_ppo's trainer and workers: under verl's one-step-off
    app it does not judge, and VL012 says which rule would have spoken, once per run."""
    line = "python3 -m verl.experimental.one_step_off_policy.main_ppo actor_rollout_ref.rollout.name=vllm actor_rollout_ref.actor.grad_clip=0.5\n"
    for name in ("a.sh", "b.sh"):
        (tmp_path / name).write_text("#!/bin/bash\n" + line)
    monkeypatch.chdir(tmp_path)
    found = _findings(tmp_path, verl_trees, NEWEST, "a.sh", "b.sh")
    assert [(d.code, d.span.path, d.span.line, d.span.col) for d in found] == [("VL012", "a.sh", 2, 12)]
    assert "VL204 would report `actor_rollout_ref.actor.grad_clip`" in found[0].message
    (tmp_path / "c.sh").write_text(
        "#!/bin/bash\n" + line.replace("verl.experimental.one_step_off_policy.main_ppo", "verl.trainer.main_ppo")
    )
    assert [d.code for d in _findings(tmp_path, verl_trees, NEWEST, "c.sh")] == ["VL204"]


OTHER_APPS = "verl.experimental.one_step_off_policy.main_ppo", "verl.experimental.fully_async_policy.fully_async_main"


def test_verls_other_apps_get_the_findings_their_configs_and_workers_have(tmp_path, monkeypatch, verl_trees):
    """The issue's overrides on verl 0.9.1's one-step-off and fully-async apps (their configs put
    ppo_trainer under their own name): one-step-off validates as main_ppo does, so it gets every
    finding but the record verified on main_ppo's trainer (VL204), which VL012 names (once per
    app in a run). The
    fully-async app skips validate_config (it requires data.train_batch_size=0), so the batch
    rules of the validation stay silent, while its actor's worker still builds the actor's config
    dataclass, which rejects both micro batch keys (VL303), and its rollout still splits the GPUs
    (VL306) and its actor its mini batch (VL304)."""
    line = f"{SIZES} actor_rollout_ref.rollout.name=vllm actor_rollout_ref.actor.grad_clip=0.5\n"
    names = {"verl.trainer.main_ppo": "main.sh", OTHER_APPS[0]: "one_step.sh", OTHER_APPS[1]: "fully_async.sh"}
    for module, name in names.items():
        (tmp_path / name).write_text(f"#!/bin/bash\npython3 -m {module} {line}")
    monkeypatch.chdir(tmp_path)
    found = _findings(tmp_path, verl_trees, NEWEST, *names.values())
    codes = {name: sorted(d.code for d in found if d.span.path == name) for name in names.values()}
    assert codes["main.sh"] == ["VL204", "VL301", "VL302", "VL303", "VL304", "VL306", "VL315", "VL315"]
    assert codes["one_step.sh"] == ["VL012", *codes["main.sh"][1:]]
    assert codes["fully_async.sh"] == ["VL012", "VL303", "VL304", "VL306"], found
    for d in found:
        assert d.code != "VL012" or "VL204 would report `actor_rollout_ref.actor.grad_clip`" in d.message
