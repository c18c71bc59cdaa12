"""VL011 (issue #17): a variable whose value reaches a launch while the script assigns it nowhere,
through the real pipeline (tree-sitter-bash, Hydra, verl 0.9.1) with line:col; and each case
where the rule must stay silent because the script may set it, or expects it unset."""

from __future__ import annotations

import subprocess

import pytest

LAUNCH = "python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm"


def vl011(lint, text: str) -> list[tuple[int, int, str, str]]:
    report = lint(text, select=("VL011",))
    return [(d.span.line, d.span.col, d.key, str(d.severity)) for d in report.diagnostics]


def test_a_lower_case_variable_never_assigned_is_empty_in_bash():
    """What the rule is about, on real bash: `$pwd` (for `$PWD`) expands to nothing."""
    real = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", 'WORKSPACE_HOME=$pwd; printf "%s|" "$WORKSPACE_HOME"'],
        env={},
        capture_output=True,
        text=True,
        check=True,
    )
    assert real.stdout == "|"


def test_each_way_a_value_reaches_a_launch_is_reported_at_the_use(lint):
    text = (
        "#!/bin/bash\n"
        "WORK=$pwd\n"  # 2: through another variable, reported where `$pwd` is written
        "ARGS=(data.train_files=$train_path)\n"  # 3: through an array element
        f"X=$mode torchrun --nproc_per_node=$ngpus -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm \\\n"  # 4
        '  trainer.default_local_dir=$WORK/ckpt "${ARGS[@]}" trainer.n_gpus_per_node=$NGPUS trainer.project_name=${name}_x\n'  # 5
        f"{LAUNCH} trainer.default_local_dir=$WORK/other\n"  # the same `$pwd` again: reported once
    )
    assert vl011(lint, text) == [
        (2, 6, "pwd", "warning"),
        (3, 24, "train_path", "warning"),
        (4, 3, "mode", "warning"),
        (4, 35, "ngpus", "warning"),
        (5, 77, "NGPUS", "info"),  # upper case: by convention exported by the user
        (5, 105, "name", "warning"),
    ]


def test_message_and_help(lint):
    [d] = lint(f"#!/bin/bash\n{LAUNCH} trainer.n_gpus_per_node=$ngpus\n", select=("VL011",)).diagnostics
    assert d.code == "VL011" and (d.span.line, d.span.col, d.span.end_col) == (2, 94, 100)
    assert d.message == "`$ngpus` is never assigned in this script; its value comes from the environment at run time"
    assert d.help == "set it in the script or give a default (`${ngpus:-...}`); verl-lint treats it as unknown"


@pytest.mark.parametrize(
    "before, use",
    [
        ("source ./not_here.sh\n", "$ngpus"),  # a file verl-lint cannot read may set it
        (". /etc/profile.d/cluster.sh\n", "$ngpus"),  # outside the scanned tree: never read
        ('eval "$(conda shell.bash hook)"\n', "$ngpus"),
        ("export $(grep -v '^#' .env | xargs)\n", "$ngpus"),
        ("", "${ngpus:-8}"),
        ("", "${ngpus:=8}"),
        ("", "${ngpus:?set ngpus}"),
        ("", "8${ngpus:+$ngpus}"),
        ('[ -z "$ngpus" ] && ngpus=8\n', "$ngpus"),  # the `set -u`-safe guard assigns it
        ('if [ -z "$ngpus" ]; then echo "export ngpus" >&2; exit 1; fi\n', "$ngpus"),  # checked first
        ("read -r ngpus < gpus.txt\n", "$ngpus"),
        ("for ngpus in 8; do :; done\n", "$ngpus"),
        ("while getopts g: ngpus; do :; done\n", "$ngpus"),
        ("mapfile -t ngpus < gpus.txt\n", "$ngpus"),
        ("printf -v ngpus '%d' 8\n", "$ngpus"),
        ("(( ngpus = 8 ))\n", "$ngpus"),
        ("f() { local ngpus=8; echo $ngpus; }\n", "$ngpus"),  # assigned somewhere: VL002's business, not this rule's
        ("", "$SLURM_GPUS_ON_NODE"),  # set by the cluster
        ("", "$LOCAL_WORLD_SIZE"),
        ("", "$1"),  # a script argument, not a name
        ('echo "$undefined_in_echo"\n', "8"),  # never reaches a launch
    ],
)
def test_silent_when_the_script_may_set_it_or_expects_it_unset(lint, before, use):
    assert vl011(lint, f"#!/bin/bash\n{before}{LAUNCH} trainer.n_gpus_per_node={use}\n") == []


def test_a_sourced_file_that_is_read_sets_it(lint, tmp_path):
    (tmp_path / "env.sh").write_text("ngpus=8\n")
    assert vl011(
        lint, f"#!/bin/bash\nsource ./env.sh\n{LAUNCH} trainer.n_gpus_per_node=$ngpus trainer.nnodes=$nodes\n"
    ) == [(3, 116, "nodes", "warning")]


def test_a_command_name_never_assigned_before_overrides(lint):
    """`$COMMAND data.x=1 ...` with COMMAND assigned nowhere (verl's own run_mimo_*_megatron.sh,
    0.7.1-0.9.0): bash runs the first override as the command. An `export A=$X:$Y/b`, which the
    grammar splits in two, is no hidden assignment that would silence the rule."""
    real = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", "$COMMAND data.train_files=x trainer.nnodes=1"],
        env={},
        capture_output=True,
        text=True,
    )
    assert real.returncode == 127 and "data.train_files=x: command not found" in real.stderr
    text = (
        "#!/bin/bash\n"
        "export PYTHONPATH=$PYTHONPATH:$PYPATH/mbridge:$PYPATH/Megatron-LM\n"
        'ENTRYPOINT=${ENTRYPOINT:-"-m verl.trainer.sft_trainer"}\n'
        "$COMMAND \\\n  data.train_files=$HOME/x trainer.nnodes=1\n"  # 4
        "$PYTHON_BIN prepare.py --out=x\n"  # not overrides: a program the environment names
    )
    [(line, col, key, severity)] = vl011(lint, text)
    assert (line, col, key, severity) == (4, 1, "COMMAND", "warning")
    message = next(d.message for d in lint(text, select=("VL011",)).diagnostics)
    assert "bash runs `data.train_files=...` as the command (command not found)" in message
    assert vl011(lint, text.replace("#!/bin/bash\n", '#!/bin/bash\nCOMMAND="torchrun ${ENTRYPOINT}"\n')) == []
