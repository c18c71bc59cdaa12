"""How much time the verl-lint Hydra callback adds to a Hydra app's startup.

A tiny `@hydra.main` app runs on a real verl release's trainer config (`ppo_trainer`) with the
overrides of a typical GRPO launch (`OVERRIDES`, a clean job), once without and once with
`+hydra.callbacks.verl_lint._target_=verl_lint.callback.VerlLintCallback`, interleaved, in fresh
processes. The app records the wall and CPU time from its first line to the start of the task
function; the paired difference is the end-to-end cost (interpreter start-up, Hydra's import
and the compose cancel out). The task checks that no heavy module (torch, torch_npu, vllm,
verl, ray) was imported.

That difference is the right quantity but a noisy estimate: Hydra's own start-up (~2 s here)
varies by more than the target between two runs. What the callback adds is therefore measured
inside the runs: Hydra's import of `verl_lint.callback` plus the callback's own `on_job_start`
timer (every lint stage and every lazy import; the "(N ms)" of its closing log line), medians over the runs
(wall time), and step by step in fresh processes (wall and CPU time; the calls on_job_start makes,
with the app's file as the task's). The verdict uses the CPU
time of those steps (`--verdict wall` for the wall time): the work is single-threaded, so on a
quiet machine the two agree, and on a busy one only CPU time measures the callback.

    python bench/callback_overhead.py [--verl 0.9.1] [--runs 15] [--json]

Target: under 50 ms added.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TARGET_MS = 50.0

# A typical GRPO launch on one 8-GPU node (every key exists in verl 0.7-0.9's ppo_trainer).
OVERRIDES = [
    "algorithm.adv_estimator=grpo",
    "algorithm.use_kl_in_reward=False",
    "data.train_files=/data/gsm8k/train.parquet",
    "data.val_files=/data/gsm8k/test.parquet",
    "data.train_batch_size=512",
    "data.max_prompt_length=1024",
    "data.max_response_length=2048",
    "data.filter_overlong_prompts=True",
    "data.truncation=error",
    "actor_rollout_ref.model.path=/models/Qwen2.5-7B-Instruct",
    "actor_rollout_ref.model.use_remove_padding=True",
    "actor_rollout_ref.model.enable_gradient_checkpointing=True",
    "actor_rollout_ref.actor.optim.lr=1e-6",
    "actor_rollout_ref.actor.ppo_mini_batch_size=128",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=16",
    "actor_rollout_ref.actor.use_kl_loss=True",
    "actor_rollout_ref.actor.kl_loss_coef=0.001",
    "actor_rollout_ref.actor.kl_loss_type=low_var_kl",
    "actor_rollout_ref.actor.entropy_coeff=0",
    "actor_rollout_ref.actor.fsdp_config.param_offload=False",
    "actor_rollout_ref.actor.fsdp_config.optimizer_offload=False",
    "actor_rollout_ref.rollout.name=vllm",
    "actor_rollout_ref.rollout.tensor_model_parallel_size=2",
    "actor_rollout_ref.rollout.gpu_memory_utilization=0.6",
    "actor_rollout_ref.rollout.n=5",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=32",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=32",
    "actor_rollout_ref.ref.fsdp_config.param_offload=True",
    "trainer.critic_warmup=0",
    "trainer.logger=[console]",
    "trainer.project_name=verl_grpo_gsm8k",
    "trainer.experiment_name=qwen2_7b",
    "trainer.n_gpus_per_node=8",
    "trainer.nnodes=1",
    "trainer.save_freq=20",
    "trainer.test_freq=5",
    "trainer.total_epochs=15",
]
ENABLE = "+hydra.callbacks.verl_lint._target_=verl_lint.callback.VerlLintCallback"

APP = """\
import time
_W0 = time.perf_counter()
_C0 = time.process_time()
import gc
import json
import sys

import hydra

HEAVY = ("torch", "torch_npu", "vllm", "verl", "ray", "sglang")
_GC = [0.0, 0.0]  # seconds in collector pauses, start of the current one


def _gc_timer(phase, info):
    if phase == "start":
        _GC[1] = time.perf_counter()
    else:
        _GC[0] += time.perf_counter() - _GC[1]


gc.callbacks.append(_gc_timer)


@hydra.main(config_path=None, config_name=None, version_base=None)
def main(cfg):
    w, c = time.perf_counter(), time.process_time()
    heavy = sorted(m for m in sys.modules if m.split(".")[0] in HEAVY)
    print("BENCH " + json.dumps({"wall": w - _W0, "cpu": c - _C0, "gc": _GC[0], "heavy": heavy}), flush=True)


main()
"""


PHASES = """\
import json, os, sys, time
import hydra
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig

with initialize_config_dir(config_dir=sys.argv[1], version_base=None, job_name="bench_app"):
    cfg = compose("ppo_trainer", overrides=json.loads(sys.argv[2]), return_hydra_config=True)
HydraConfig.instance().set_config(cfg)
out = {}
def phase(name, fn):
    w, c = time.perf_counter(), time.process_time()
    r = fn()
    out[name] = [(time.perf_counter() - w) * 1000, (time.process_time() - c) * 1000]
    return r
cb = phase("import verl_lint.callback", lambda: __import__("verl_lint.callback", fromlist=["x"]))
import gc
gc.disable()  # as on_job_start runs the steps below (VerlLintCallback.on_job_start)
phase("import verl_lint.registry (+compose, locate, model)", lambda: __import__("verl_lint.registry"))
phase("import verl_lint.rules (rule pack, YAML tables)", lambda: __import__("verl_lint.rules.pack"))
live = phase("import verl_lint.live (the lint core)", lambda: __import__("verl_lint.live", fromlist=["x"]))
app = sys.argv[3]  # the task function's file, as the callback passes it: the app is a project's own entry point
phase("first lint_config (config + env rules)", lambda: live.lint_config(cfg, env=os.environ, task_file=app))
def allocator_check():
    try:
        return live.live_findings(cfg, app, os.environ)
    except Exception as ex:
        out["live error"] = repr(ex)
phase("first live_findings (allocator check)", allocator_check)
gc.enable()
phase("lint_config again (warm caches)", lambda: live.lint_config(cfg, env=os.environ, task_file=app))
print("PHASES " + json.dumps(out))
"""


def _child_env(pycache: Path | None) -> dict:
    """The children's environment. With `pycache`, bytecode is written and reused there, as in an
    installed package (PYTHONDONTWRITEBYTECODE would make every process recompile verl-lint)."""
    env = dict(os.environ, HYDRA_FULL_ERROR="1")
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def _phases(app: Path, config_dir: Path, runs: int, env: dict) -> dict:
    """Median wall/CPU ms of each step of the callback's work, in fresh processes."""
    samples: dict[str, list] = {}
    errors = set()
    for i in range(runs + 1):
        proc = subprocess.run(
            [sys.executable, "-c", PHASES, str(config_dir), json.dumps(OVERRIDES), str(app)],
            capture_output=True,
            text=True,
            env=env,
        )
        if i == 0:
            continue  # warm-up (bytecode, file cache)
        m = re.search(r"^PHASES (.*)$", proc.stdout, re.M)
        if m is None:
            raise SystemExit(f"phase run failed:\n{proc.stdout}{proc.stderr}")
        for k, v in json.loads(m.group(1)).items():
            if k == "live error":
                errors.add(v)
            else:
                samples.setdefault(k, []).append(v)
    res = {k: [statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)] for k, v in samples.items()}
    if errors:
        res["live error"] = sorted(errors)
    return res


def _reference(runs: int, env: dict) -> list[float]:
    """Median wall/CPU ms of `import hydra` in a fresh process: a yardstick for this machine's speed."""
    code = (
        "import time\nw, c = time.perf_counter(), time.process_time()\nimport hydra\nprint((time.perf_counter() - "
        "w) * 1000, (time.process_time() - c) * 1000)"
    )
    xs = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env).stdout.split()
        xs.append((float(out[0]), float(out[1])))
    return [statistics.median(x[0] for x in xs), statistics.median(x[1] for x in xs)]


def _run(app: Path, config_dir: Path, out_dir: Path, with_callback: bool, overrides: list[str], env: dict) -> dict:
    cmd = [
        sys.executable,
        str(app),
        "--config-dir",
        str(config_dir),
        "--config-name",
        "ppo_trainer",
        f"hydra.run.dir={out_dir}",
    ]
    cmd += overrides
    if with_callback:
        cmd.append(ENABLE)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=out_dir.parent)
    text = proc.stdout + proc.stderr
    m = re.search(r"^BENCH (.*)$", text, re.M)
    if proc.returncode != 0 or m is None:
        raise SystemExit(f"benchmark app failed (rc={proc.returncode}):\n{text}")
    res = json.loads(m.group(1))
    # The callback's closing line says how long on_job_start took, clean or with findings below fail_on.
    cb = re.search(
        r"verl-lint: (?:config and environment clean|no findings, but .*|\d+ finding\(s\), .*) \((\d+(?:\.\d+)?) ms\)$",
        text,
        re.M,
    )
    res["on_job_start_ms"] = float(cb.group(1)) if cb else None
    if with_callback and "verl-lint" not in text:
        raise SystemExit(f"the callback did not run:\n{text}")
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--verl", default="0.9.1", help="verl release whose trainer config the app composes")
    ap.add_argument("--config-dir", help="use this config dir instead of a cached release's verl/trainer/config")
    ap.add_argument("--runs", type=int, default=15, help="paired runs (fresh processes each)")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    ap.add_argument("--no-phases", action="store_true", help="skip the per-step breakdown")
    ap.add_argument(
        "--verdict",
        choices=("cpu", "wall"),
        default="cpu",
        help="judge the target on CPU time (default: the same as wall time on a quiet machine, and unaffected by "
        "others' load) or wall time",
    )
    ap.add_argument(
        "--cold-bytecode",
        action="store_true",
        help="keep PYTHONDONTWRITEBYTECODE as set (every process then recompiles verl-lint's sources)",
    )
    args = ap.parse_args(argv)

    if args.config_dir:
        config_dir = Path(args.config_dir).resolve()
        label = str(config_dir)
    else:
        from verl_lint.launch.locate import release_tree

        tree = release_tree(args.verl)
        config_dir = tree.root / "verl" / "trainer" / "config"
        label = f"verl {tree.version}"
    overrides = OVERRIDES

    with tempfile.TemporaryDirectory(prefix="verl-lint-bench-") as tmp:
        app = Path(tmp, "bench_app.py")
        app.write_text(APP)
        out_dir = Path(tmp, "out")
        env = _child_env(None if args.cold_bytecode else Path(tmp, "pycache"))
        _run(app, config_dir, out_dir, True, overrides, env)  # warm the OS file cache and pyc files
        _run(app, config_dir, out_dir, False, overrides, env)
        base, withcb = [], []
        for i in range(args.runs):
            order = (False, True) if i % 2 == 0 else (True, False)
            got = {flag: _run(app, config_dir, out_dir, flag, overrides, env) for flag in order}
            base.append(got[False])
            withcb.append(got[True])
        phases = None if args.no_phases else _phases(app, config_dir, max(3, args.runs // 3), env)
        reference = _reference(max(3, args.runs // 2), env)

    def ms(xs):
        return [x * 1000 for x in xs]

    d_wall = ms([b["wall"] - a["wall"] for a, b in zip(base, withcb)])
    # Python's collector pauses (full collections walk Hydra's whole config graph) land in one
    # run or the other; without them the paired difference is much steadier.
    d_nogc = ms([(b["wall"] - b["gc"]) - (a["wall"] - a["gc"]) for a, b in zip(base, withcb)])
    d_gc = ms([b["gc"] - a["gc"] for a, b in zip(base, withcb)])
    d_cpu = ms([b["cpu"] - a["cpu"] for a, b in zip(base, withcb)])
    own = [r["on_job_start_ms"] for r in withcb if r["on_job_start_ms"] is not None]
    heavy = sorted({m for r in withcb for m in r["heavy"]})
    q = lambda xs: statistics.quantiles(xs, n=4) if len(xs) >= 2 else [xs[0]] * 3  # noqa: E731
    result = {
        "config": f"{label} ppo_trainer",
        "runs": args.runs,
        "startup_without_ms": {
            "wall": statistics.median(ms([r["wall"] for r in base])),
            "cpu": statistics.median(ms([r["cpu"] for r in base])),
            "cpu_range": [min(ms([r["cpu"] for r in base])), max(ms([r["cpu"] for r in base]))],
        },
        "startup_with_ms": {
            "wall": statistics.median(ms([r["wall"] for r in withcb])),
            "cpu": statistics.median(ms([r["cpu"] for r in withcb])),
        },
        "added_ms": {
            "wall_median": statistics.median(d_wall),
            "wall_iqr": [q(d_wall)[0], q(d_wall)[2]],
            "cpu_median": statistics.median(d_cpu),
            "cpu_iqr": [q(d_cpu)[0], q(d_cpu)[2]],
            "wall_without_gc_median": statistics.median(d_nogc),
            "wall_without_gc_iqr": [q(d_nogc)[0], q(d_nogc)[2]],
            "gc_median": statistics.median(d_gc),
        },
        "on_job_start_ms_median": statistics.median(own) if own else None,
        "heavy_modules_imported": heavy,
        "target_ms": TARGET_MS,
    }
    cb_import = phases["import verl_lint.callback"][0] if phases else 0.0
    result["added_in_process_ms"] = cb_import + result["on_job_start_ms_median"] if own else None
    # The same in CPU time, step by step in fresh processes: what the callback costs whatever else
    # runs on the machine (on a quiet one, wall time is the same: the work is single-threaded).
    steps = [k for k in (phases or {}) if k not in ("live error", "lint_config again (warm caches)")]
    result["added_in_process_cpu_ms"] = sum(phases[k][1] for k in steps) if phases else None
    measure = result["added_in_process_cpu_ms"] if args.verdict == "cpu" else result["added_in_process_ms"]
    result["verdict_on"] = args.verdict
    result["within_target"] = measure is not None and measure < TARGET_MS
    result["import_hydra_ms"] = {"wall": reference[0], "cpu": reference[1]}
    result["bytecode"] = "recompiled in every process" if args.cold_bytecode else "cached (as installed)"
    if phases is not None:
        result["phases_ms"] = phases
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    a = result["added_ms"]
    print(
        f"verl-lint callback overhead: {result['config']}, {args.runs} paired runs (fresh processes, bytecode "
        f"{result['bytecode']})"
    )
    if result["added_in_process_ms"] is not None:
        print(
            f"  added by the callback, measured in process: {result['added_in_process_ms']:.1f} ms = import of "
            f"verl_lint.callback {cb_import:.1f} ms + on_job_start {result['on_job_start_ms_median']:.1f} ms "
            "(medians; every lint stage and lazy import)"
        )
    if "phases_ms" in result:
        print("  where the time goes (in fresh processes, median wall / CPU ms):")
        for k, v in result["phases_ms"].items():
            if k == "live error":
                print(f"    (the live check raised: {'; '.join(v)} -- the callback fails open on it)")
            else:
                print(f"    {k:<52} {v[0]:7.1f} / {v[1]:7.1f}")
    print(f"  heavy modules imported by the task start: {', '.join(heavy) if heavy else 'none'}")
    spread = result["startup_without_ms"]["cpu_range"]
    print(
        "  cross-check, end to end (app start -> task start): without the callback "
        f"{result['startup_without_ms']['cpu']:.0f} ms CPU, "
        f"with it {result['startup_with_ms']['cpu']:.0f} ms (medians); paired difference {a['cpu_median']:.1f} ms CPU "
        f"(IQR {a['cpu_iqr'][0]:.0f}..{a['cpu_iqr'][1]:.0f}), {a['wall_without_gc_median']:.1f} ms wall without "
        "collector pauses. "
        f"Identical runs without the callback took {spread[0]:.0f}..{spread[1]:.0f} ms CPU here, so this only bounds "
        "the cost coarsely."
    )
    print(f"  yardstick: `import hydra` takes {reference[0]:.0f} ms wall / {reference[1]:.0f} ms CPU here")
    if result["added_in_process_cpu_ms"] is not None:
        print(
            "  added by the callback in CPU time (the steps above, up to the first live_findings): "
            f"{result['added_in_process_cpu_ms']:.1f} ms"
        )
    print(f"  target < {TARGET_MS:.0f} ms ({args.verdict}): {'met' if result['within_target'] else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
