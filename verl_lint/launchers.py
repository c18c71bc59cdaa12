"""The programs that start a verl launch, declared once.

Each row says how the program is written on a command line (`names`, `subcommand`), how it names
the app it starts (`reads`, one of `READS`), and which of its options say how many processes it
starts (`processes`). Three readers use this table and nothing else:

- the shell recogniser (`launch/recognise.py`): which command is a launch, where its app and overrides are;
- the `run` wrapper (`wrapper.py`): a launcher's path is a program to lint as a command line, never
  a shell script to read (pyenv's `python3` shim is one);
- the docs and workflow reader (`embedded.py`): which code blocks and `run:` steps hold a launch.

`tests/test_launchers.py` runs every row's `example` through all three, so a new row is tested
as soon as it is written.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from functools import cache
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # the words of a command (the recogniser's); this table imports nothing at run time
    from .model import Word

# How a launcher names the app it starts (the recogniser has one reader per way).
READS = {
    "python": "its own options, then `-m MOD` or `FILE.py` (`-m torch.distributed.run`: that launcher's module)",
    "options": "its options (`--opt V`, `--opt=V`, the value-less `flags`), then `-m MOD` / `--module MOD` or `FILE`",
    "entry": "the first word naming a verl entry point (a module after `-m`/`--module`, a `main_*.py` file)",
    "after --": "the command after `--`",
    "interpreter": "the first program after it that starts an app (its options may take separate values: `srun -N 2`)",
    "next": "the next word after its own `-x` options",
    "env": "`env`'s grammar: `A=1` sets, `-u A` unsets, then the command",
}
STARTS_APP = ("python", "options", "entry", "after --")  # the readers that find the app themselves


_NONE: Mapping = MappingProxyType({})


class Launcher(NamedTuple):  # a NamedTuple, not a dataclass: it is defined at every run's start
    """One way of starting a program, as a command line writes it."""

    names: tuple[str, ...]  # the program's basenames (the first is the one examples use)
    reads: str  # a key of READS
    example: str  # a command line starting `verl.trainer.main_ppo` with the override `a=1`
    starts: str  # how many processes it starts, in words (and why it is not read where `processes` is empty)
    pattern: str = ""  # a regex for the basename, where `names` are only examples (`python3.10`)
    subcommand: tuple[str, ...] = ()  # `accelerate launch`, `ray job submit`
    module_flags: tuple[str, ...] = ()  # the options naming the app's module
    value_options: frozenset[str] = frozenset()  # options that take a separate value
    flags: frozenset[str] = frozenset()  # options that take no value ("options" readers)
    modules: tuple[str, ...] = ()  # `python -m MODULE` runs this launcher
    # Its options that size the job (dashes stripped, `-` as `_`) → the key of `Launch.processes`
    processes: Mapping[str, str] = _NONE
    implies: Mapping[str, tuple[str, str]] = _NONE  # a flag → (key, value) it sets

    @property
    def program(self) -> str:
        """A regex of its basenames."""
        return self.pattern or "|".join(map(re.escape, self.names))

    def named(self, base: str) -> bool:
        return _matcher(self.program).match(base) is not None

    @property
    def starts_app(self) -> bool:
        return self.reads in STARTS_APP


_MAIN = "verl.trainer.main_ppo a=1"

PYTHON = Launcher(
    names=("python3", "python", "python3.10", "python.sh"),
    # `python3.10`, and `python.sh`: the interpreter wrapper Isaac Sim ships (verl's VLA recipe runs it)
    pattern=r"python(?:\d(?:\.\d+)?)?(?:\.sh)?",
    reads="python",
    module_flags=("-m",),
    value_options=frozenset({"-X", "-W", "-Q"}),
    example=f"python3 -u -X importtime -m {_MAIN}",
    starts="one process",
)
TORCHRUN = Launcher(
    names=("torchrun",),
    reads="options",
    module_flags=("-m", "--module"),
    flags=frozenset({"--standalone", "--no-python", "--no_python", "--run-path", "--run_path", "--module", "-m"}),
    modules=("torch.distributed.run", "torch.distributed.launch"),
    processes={"nproc_per_node": "nproc_per_node", "nnodes": "nnodes"},
    implies={"standalone": ("nnodes", "1")},
    example=f"torchrun --nproc_per_node=8 --nnodes 2 -m {_MAIN}",
    starts="`--nproc_per_node` × `--nnodes` (`--standalone`: one node; torchrun's default: 1)",
)
DEEPSPEED = Launcher(
    names=("deepspeed",),
    reads="entry",
    module_flags=("-m", "--module"),
    example=f"deepspeed --num_gpus 8 --bind_cores_to_rank --module {_MAIN}",
    starts="`--num_gpus` × `--num_nodes`, by default every GPU of its hostfile's nodes (not read: no hostfile here)",
)
ACCELERATE = Launcher(
    names=("accelerate",),
    subcommand=("launch",),
    reads="entry",
    module_flags=("-m", "--module"),
    example=f"accelerate launch --num_processes 8 --mixed_precision bf16 -m {_MAIN}",
    starts="`--num_processes` in all, by default from accelerate's config file (not read)",
)
RAY_JOB_SUBMIT = Launcher(
    names=("ray",),
    subcommand=("job", "submit"),
    reads="after --",
    example=f"ray job submit --address=http://x:8265 --runtime-env-json='{{}}' -- python3 -m {_MAIN}",
    starts="what the command after `--` starts, on the Ray cluster",
)
CLUSTER = Launcher(
    names=(
        "srun",
        "mpirun",
        "mpiexec",
        "apptainer",
        "singularity",
        "docker",
        "podman",
        "uv",
        "conda",
        "mamba",
        "micromamba",
        "pixi",
        "poetry",
        "timeout",
        "sudo",
    ),
    reads="interpreter",
    example=f"srun -N 2 --gres=gpu:8 python3 -m {_MAIN}",
    starts="what the program after it starts (srun/mpirun: once per task; not read)",
)
WRAPPERS = Launcher(
    names=("nohup", "exec", "time", "stdbuf", "nice", "setsid", "command", "numactl", "taskset"),
    reads="next",
    example=f"nohup python3 -m {_MAIN}",
    starts="what the next program starts",
)
ENV = Launcher(
    names=("env",),
    reads="env",
    example=f"env -u CUDA_VISIBLE_DEVICES B=1 python3 -m {_MAIN}",
    starts="what the program after its assignments starts",
)

LAUNCHERS = (PYTHON, TORCHRUN, DEEPSPEED, ACCELERATE, RAY_JOB_SUBMIT, CLUSTER, WRAPPERS, ENV)


@cache
def _matcher(program: str) -> re.Pattern:
    return re.compile(f"^(?:{program})$")


def at(words: list[Word], i: int) -> Launcher | None:
    """The launcher written at `words[i]` (its subcommand following), else None."""
    t = words[i].text
    if t is None:
        return None
    base = os.path.basename(t)
    for la in LAUNCHERS:
        if la.named(base) and [w.text for w in words[i + 1 : i + 1 + len(la.subcommand)]] == list(la.subcommand):
            return la
    return None


def by_module(module: str) -> Launcher | None:
    """The launcher `python -m MODULE` runs (`torch.distributed.run`: torchrun), else None."""
    return next((la for la in LAUNCHERS if module in la.modules), None)


def is_launcher(program: str) -> bool:
    """Is `program` (a path or a name) one of the launchers, whatever follows it?"""
    base = os.path.basename(program)
    return any(la.named(base) for la in LAUNCHERS)


def launch_pattern() -> str:
    """A regex finding a launch in text: a launcher that starts an app, then on the same line a
    module after one of its module flags or a `.py` file (a quick test; the recogniser decides)."""
    programs = "|".join(
        la.program + "".join(rf"\s+{re.escape(s)}" for s in la.subcommand) for la in LAUNCHERS if la.starts_app
    )
    flags = "|".join(sorted({re.escape(f) for la in LAUNCHERS for f in la.module_flags}, key=len, reverse=True))
    return rf"(?:{programs})\s[^\n]*?(?:(?:{flags})\s+[\w.]+|\S+\.py\b)"
