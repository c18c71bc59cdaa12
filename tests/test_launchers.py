"""The launcher table (verl_lint/launchers.py) drives its three readers: every row's example, with
each of its names, is one launch in a script, in a README's code block and on `verl-lint run`'s
command line; real bash text through the real shell front end."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from conftest import NEWEST

from verl_lint import embedded
from verl_lint.launchers import LAUNCHERS, READS, Launcher, is_launcher
from verl_lint.model import COMMAND_LINE, command_text
from verl_lint.pipeline import script_launches
from verl_lint.runner import lint_paths
from verl_lint.runs import Options
from verl_lint.settings import Settings
from verl_lint.walk import collect
from verl_lint.wrapper import script_call

ROWS = [(la, name) for la in LAUNCHERS for name in la.names]


def _example(la: Launcher, name: str) -> str:
    return name + la.example[len(la.names[0]) :]


def _one(path: Path, text: str):
    _, _, found = script_launches(str(path), text, Options())
    assert len(found) == 1, (text, found)
    return found[0]


def _expected(la, launch) -> None:
    assert launch.not_analysable is None, launch.not_analysable
    assert (launch.module, launch.file) == ("verl.trainer.main_ppo", None)
    assert [w.text for w in launch.overrides] == ["a=1"]


@pytest.mark.parametrize(("la", "name"), ROWS, ids=[f"{la.reads}:{name}" for la, name in ROWS])
def test_every_launcher_in_a_script(la, name, tmp_path):
    launch = _one(tmp_path / "run.sh", f"#!/bin/bash\n{_example(la, name)}\n")
    _expected(la, launch)
    assert launch.entry_span.line == 2


@pytest.mark.parametrize(("la", "name"), ROWS, ids=[f"{la.reads}:{name}" for la, name in ROWS])
def test_every_launcher_in_a_readme_code_block(la, name, tmp_path):
    doc = f"# Train\n\nRun:\n\n```bash\n{_example(la, name)}\n```\n"
    path = tmp_path / "README.md"
    assert embedded.kind(path, doc) == "doc"
    launch = _one(path, embedded.shell_view(path, doc))
    _expected(la, launch)
    assert launch.entry_span.line == 6  # its own line in the README


@pytest.mark.parametrize(("la", "name"), ROWS, ids=[f"{la.reads}:{name}" for la, name in ROWS])
def test_every_launcher_on_the_run_command_line(la, name, tmp_path):
    """`verl-lint run -- <example>` lints the command line itself, even when the launcher is a
    path to a shell script (a pyenv or conda shim)."""
    argv = shlex.split(_example(la, name))
    assert script_call(argv) is None
    shim = tmp_path / "bin" / argv[0]
    shim.parent.mkdir()
    shim.write_text('#!/bin/bash\nexec real "$@"\n')
    assert script_call([str(shim), *argv[1:]]) is None and is_launcher(str(shim))
    _expected(la, _one(Path(COMMAND_LINE), command_text(argv)))


@pytest.mark.parametrize("la", [la for la in LAUNCHERS if la.modules], ids=lambda la: la.names[0])
def test_python_dash_m_of_a_launcher_module_is_that_launcher(la, tmp_path):
    """`python3 -m torch.distributed.run ...` reads as torchrun: its options, the processes it starts."""
    for module in la.modules:
        text = f"python3 -m {module}{la.example[len(la.names[0]) :]}\n"
        launch = _one(tmp_path / "run.sh", text)
        _expected(la, launch)
        assert set(launch.processes) == set(la.processes.values())


def test_the_options_that_size_the_job_are_read_as_the_table_says(tmp_path):
    [torchrun] = [la for la in LAUNCHERS if la.processes]
    launch = _one(tmp_path / "run.sh", torchrun.example + "\n")
    assert {k: w.text for k, w in launch.processes.items()} == {"nproc_per_node": "8", "nnodes": "2"}
    [(flag, (key, value))] = torchrun.implies.items()
    standalone = _one(tmp_path / "s.sh", f"torchrun --{flag} --nproc-per-node=4 -m verl.trainer.main_ppo a=1\n")
    assert {k: w.text for k, w in standalone.processes.items()} == {"nproc_per_node": "4", key: value}


def test_deepspeed_module_in_a_readme_is_linted_as_in_a_script(verl_trees, tmp_path):
    """The bug of issue #38: `deepspeed --module verl.trainer.main_ppo` in a README's code block was
    not read (a directory's walk skipped the README) while the same line in a `.sh` was. Both now
    give the same findings, at the same column."""
    line = "deepspeed --num_gpus 8 --module verl.trainer.main_ppo actor_rollout_ref.actor.ppo_mini_batch_sizee=4"
    (tmp_path / "run.sh").write_text(f"#!/bin/bash\n{line}\n")
    (tmp_path / "README.md").write_text(f"# Train\n\n```bash\n{line}\n```\n")
    files, errors = collect([str(tmp_path)], Settings())
    assert sorted(f.name for f in files) == ["README.md", "run.sh"] and not errors
    reports = lint_paths(files, Options(verl_tree=verl_trees[NEWEST]), use_cache=False)
    doc, script = sorted(reports, key=lambda r: r.path)
    assert script.launches == doc.launches == 1
    found = [(d.code, d.span.line, d.span.col) for d in script.diagnostics]
    assert found and [(c, n + 2, col) for c, n, col in found] == [
        (d.code, d.span.line, d.span.col) for d in doc.diagnostics
    ]


def test_the_table_is_consistent():
    assert all(la.reads in READS and la.example.startswith(la.names[0] + " ") for la in LAUNCHERS)
    names = [n for la in LAUNCHERS for n in la.names]
    assert len(names) == len(set(names))  # one row per program
