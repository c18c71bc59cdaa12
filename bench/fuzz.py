"""Fuzz the whole pipeline with generated bash launch scripts.

    python bench/fuzz.py [--cases 10000] [--seed 0] [--verl 0.9.1]

Scripts are built from a grammar of the constructs real verl scripts use (assignments,
arithmetic, arrays, quoting, continuations, functions, overrides with +/++/~), with
random bytes spliced in. Every case must lint without an internal error, every
diagnostic must lie inside the file, and a second run must give identical output.
The same generator backs the bounded hypothesis test in tests/test_robustness.py.
"""

from __future__ import annotations

import argparse
import random
import string
import sys
import time
from pathlib import Path

KEYS = [
    "data.train_batch_size",
    "data.max_prompt_length",
    "actor_rollout_ref.rollout.n",
    "actor_rollout_ref.rollout.tensor_model_parallel_size",
    "actor_rollout_ref.rollout.name",
    "actor_rollout_ref.actor.ppo_mini_batch_size",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
    "actor_rollout_ref.actor.use_dynamic_bsz",
    "trainer.nnodes",
    "trainer.n_gpus_per_node",
    "trainer.logger",
    "trainer.no_such_key",
    "actor_rollout_ref.rollout.engine_kwargs.vllm.enable_expert_parallel",
    "ray_kwargs.ray_init.runtime_env.env_vars.VLLM_USE_V1",
    "critic",
    "model_engine",
]
VALUES = [
    "1",
    "8",
    "0",
    "-3",
    "True",
    "false",
    "null",
    "vllm",
    "sglang",
    "[a,b]",
    '\'["x","y"]\'',
    "{a:1}",
    "1e-6",
    "abc",
    "1,2",
    "???",
    "${oc.select:trainer.nnodes,1}",
    "megatron",
    "dp",
]
VARS = ["NNODES", "GPUS", "TP", "SP", "BSZ", "MODEL", "ARGS", "X"]
ENV = [
    "VLLM_ATTENTION_BACKEND=XFORMERS",
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
    "VLLM_USE_V1=0",
    "HCCL_CONNECT_TIMEOUT=1500",
]


def _value(rnd: random.Random) -> str:
    r = rnd.random()
    if r < 0.5:
        return rnd.choice(VALUES)
    if r < 0.7:
        return f"${rnd.choice(VARS)}"
    if r < 0.8:
        return f"${{{rnd.choice(VARS)}:-{rnd.randint(0, 64)}}}"
    if r < 0.9:
        return f"$(( {rnd.choice(VARS)} * {rnd.randint(0, 9)} / {rnd.randint(0, 4)} ))"
    return f"$({rnd.choice(['date', 'nproc', 'touch /tmp/verl-lint-fuzz-marker'])})"


def _override(rnd: random.Random) -> str:
    prefix = rnd.choice(["", "", "", "+", "++", "~"])
    text = f"{prefix}{rnd.choice(KEYS)}={_value(rnd)}"
    q = rnd.random()
    if q < 0.1:
        return f'"{text}"'
    if q < 0.15:
        return f"'{text}'"
    return text


def _statement(rnd: random.Random, depth: int = 0) -> str:
    k = rnd.randrange(14 if depth < 2 else 6)
    var = rnd.choice(VARS)
    if k == 0:
        return f"{var}={_value(rnd)}"
    if k == 1:
        return f"export {rnd.choice(ENV)}"
    if k == 2:
        return f"{var}=({' '.join(_override(rnd) for _ in range(rnd.randint(0, 4)))})"
    if k == 3:
        return f"{var}+=({_override(rnd)})"
    if k == 4:
        return f"{var}=$(( ({rnd.choice(VARS)} + {rnd.randint(0, 9)}) % {rnd.randint(0, 5)} ))"
    if k == 5:
        return _launch(rnd)
    if k == 6:
        return f'if [ -n "${var}" ]; then\n  {_statement(rnd, depth + 1)}\nelse\n  {_statement(rnd, depth + 1)}\nfi'
    if k == 7:
        return f"for i in 1 2 3; do\n  {_statement(rnd, depth + 1)}\ndone"
    if k == 8:
        return f"run() {{\n  local L={_value(rnd)}\n  {_launch(rnd)}\n}}\nrun"
    # Scripts inside strings and here-documents (read in place), branches, launchers.
    if k == 9:
        return rnd.choice(
            [f'bash -c "{_launch(rnd)}"', f"{var}='{_launch(rnd)}'\neval \"${var}\"", f"srun -N 2 {_launch(rnd)}"]
        )
    if k == 10:
        return f"cat <<EOF | bash\n{_launch(rnd)}\nEOF" if rnd.random() < 0.5 else f"bash <<'EOS'\n{_launch(rnd)}\nEOS"
    if k == 11:
        return (
            f'if [ "${var}" = a ]; then\n  {_statement(rnd, depth + 1)}\nelif [ "${var}" = b ]; then\n  '
            f"{_launch(rnd)}\nfi"
        )
    if k == 12:
        return (
            f'--config-path="$(pwd)/conf" {_launch(rnd)}'
            if rnd.random() < 0.3
            else f'cd "$(dirname "$0")" && {_launch(rnd)}'
        )
    return f"source ./{rnd.choice(['common.sh', '../x.sh', '/etc/profile'])}"


def _launch(rnd: random.Random) -> str:
    head = rnd.choice(
        [
            "python3 -m verl.trainer.main_ppo",
            "python3 -u -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer",
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python -m verl.trainer.main_ppo",
            "torchrun --nproc_per_node=8 -m verl.trainer.main_ppo",
            "ray job submit --address=x -- python3 -m verl.trainer.main_ppo",
            "$PYTHON -m verl.trainer.main_ppo",
        ]
    )
    parts = [head]
    for _ in range(rnd.randint(0, 8)):
        parts.append(rnd.choice([_override(rnd), f'"${{{rnd.choice(VARS)}[@]}}"', '"$@"']))
    sep = " \\\n    " if rnd.random() < 0.6 else " "
    tail = rnd.choice(["", " 2>&1 | tee log.txt", " &", ""])
    return sep.join(parts) + tail


def script(rnd: random.Random) -> str:
    lines = ["#!/bin/bash"] + [_statement(rnd) for _ in range(rnd.randint(1, 12))]
    text = "\n".join(lines) + "\n"
    if rnd.random() < 0.25:  # splice in random bytes / broken syntax
        at = rnd.randrange(len(text))
        junk = "".join(rnd.choice(string.printable + "\"'`$(){}[]\\\x00\x7f") for _ in range(rnd.randint(1, 12)))
        text = text[:at] + junk + text[at:]
    return text


def check_case(text: str, tmp: Path, options, composer) -> list[str]:
    """Problems with one case (empty when it is fine)."""
    from verl_lint.report.render import render_json
    from verl_lint.runner import lint_file

    path = tmp / "case.sh"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    first = lint_file(path, options, composer)
    second = lint_file(path, options, composer)
    problems = [f"internal error: {e.message}" for e in first.errors if "internal error" in e.message]
    n_lines = text.count("\n") + 1
    for d in first.diagnostics:
        s = d.span
        if s.path == str(path) and not (
            1 <= s.line <= n_lines and s.col >= 1 and (s.end_line, s.end_col) >= (s.line, s.col)
        ):
            problems.append(f"span outside the file: {d.code} {s}")
    if render_json([first]) != render_json([second]) or [str(e) for e in first.errors] != [
        str(e) for e in second.errors
    ]:
        problems.append("non-deterministic output")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--verl", default="0.9.1")
    args = ap.parse_args()

    import tempfile

    from verl_lint.config.compose import Composer
    from verl_lint.launch.locate import release_tree
    from verl_lint.runs import Options

    options = Options(verl_tree=release_tree(args.verl), timeout=20)
    composer = Composer(cache=False)
    rnd = random.Random(args.seed)
    marker = Path("/tmp/verl-lint-fuzz-marker")
    marker.unlink(missing_ok=True)
    failures = 0
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.cases):
            text = script(rnd)
            problems = check_case(text, Path(tmp), options, composer)
            if problems:
                failures += 1
                if failures <= 5:
                    print(f"case {i}: {problems}\n{text}", file=sys.stderr)
    elapsed = time.perf_counter() - start
    print(
        f"{args.cases} cases, {failures} failing, {elapsed:.1f} s ({args.cases / elapsed:.0f} cases/s), "
        f"marker created: {marker.exists()}"
    )
    return 1 if failures or marker.exists() else 0


if __name__ == "__main__":
    sys.exit(main())
