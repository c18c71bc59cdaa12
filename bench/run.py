"""Benchmark: verl-lint's composition against plain `hydra.compose`, in one process.

    python bench/run.py                 # everything (about a minute on a quiet 2-core box)
    python bench/run.py --profile       # + cProfile of the cold path (top 15)
    python bench/run.py --skip-cli      # only the in-process part

What it does (see bench/README.md):
1. generates the corpus (bench/make_corpus.py, seed 0) into bench/corpus/;
2. runs the real front end (shell.evaluate -> launch.launches -> locate.locate_app) per script;
3. cold pass: a fresh Composer with an empty on-disk cache, and for each launch, interleaved,
   plain `hydra.compose` with the words Hydra would receive; every outcome is compared
   (to_container(resolve=False), to_yaml (key order), a per-node signature (node class,
   ref_type, flags); for failures: the error kind and the override Hydra reports first);
4. warm passes: a new Composer on the now-filled disk cache; the same Composer again;
5. the CLI as a user runs it (process start to exit), one script and the whole tree, with
   VERL_LINT_CACHE_DIR on a temp dir (cold, then warm); `-X importtime` top costs; peak RSS.

The comparison helpers (`hydra_outcome`, `lint_outcome`, `compare`) are also used by
tests/test_equivalence.py.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import make_corpus  # noqa: E402

# ------------------------------------------------------------- outcomes ----


def node_signature(cfg) -> list:
    """Deep node signature: node class, metadata, flags, raw value, key order."""
    from omegaconf import Container, DictConfig

    out: list = []

    def walk(node, path):
        md = node._metadata
        ent = [
            path,
            type(node).__name__,
            repr(md.ref_type),
            repr(getattr(md, "object_type", None)),
            md.optional,
            repr(md.key),
            sorted(md.flags.items()) if md.flags else None,
        ]
        if isinstance(node, Container):
            if node._is_none() or node._is_missing() or node._is_interpolation():
                ent.append(repr(node._value()))
                out.append(ent)
                return
            out.append(ent)
            if isinstance(node, DictConfig):
                for k in node.keys():
                    walk(node._get_node(k), f"{path}.{k}")
            else:
                for i in range(len(node)):
                    walk(node._get_node(i), f"{path}[{i}]")
        else:
            ent.append(repr(node._value()))
            out.append(ent)

    walk(cfg, "")
    return out


@dataclass
class Outcome:
    ok: bool
    container: dict | None = None
    yaml: str | None = None
    signature: list | None = None
    error_type: str = ""  # Hydra: exception class; verl-lint: first diagnostic code
    error_word: int | None = None  # index of the override reported first
    message: str = ""
    all_errors: list = field(default_factory=list)


def _snapshot(cfg, deep: bool) -> tuple[dict, str | None, list | None]:
    from omegaconf import OmegaConf

    return (
        OmegaConf.to_container(cfg, resolve=False),
        OmegaConf.to_yaml(cfg) if deep else None,
        node_signature(cfg) if deep else None,
    )


def _chain(ex: BaseException) -> str:
    parts, seen = [], set()
    while ex is not None and id(ex) not in seen:
        seen.add(id(ex))
        parts.append(str(ex))
        ex = ex.__cause__ or ex.__context__
    return "\n".join(parts)


_PARSER = None


def _parse(word: str):
    global _PARSER
    from hydra.core.override_parser.overrides_parser import OverridesParser

    if _PARSER is None:
        _PARSER = OverridesParser.create()
    try:
        return _PARSER.parse_overrides([word])[0]
    except Exception:  # noqa: BLE001
        return None


def _spelled(o) -> str:
    """An override's key as Hydra spells it in messages (`group@package` when a package is given)."""
    return f"{o.key_or_group}@{o.package}" if o.package is not None else o.key_or_group


def hydra_culprit(ex: BaseException, words: list[str]) -> int | None:
    """The index of the override Hydra's error `ex` is about (found from the message alone)."""
    from hydra.errors import OverrideParseException

    if isinstance(ex, OverrideParseException):
        return next((i for i, w in enumerate(words) if w == ex.override), None)
    text = _chain(ex)
    parsed = [_parse(w) for w in words]

    def first(pred):
        return next((i for i, o in enumerate(parsed) if o is not None and pred(o)), None)

    m = re.search(r"Could not append to config\. An item is already at '([^']+)'", text)
    if m:
        return first(lambda o: o.is_add() and o.key_or_group == m.group(1))
    m = re.search(r"Could not delete from config\. (?:The value of )?'([^']+)'", text)
    if m:
        return first(lambda o: o.is_delete() and o.key_or_group == m.group(1))
    m = re.search(r"Could not delete '([^']+)'\. No match in the defaults list", text)
    if m:
        return first(lambda o: o.is_delete() and m.group(1).startswith(o.key_or_group))
    m = re.search(r"Could not override '([^']+)'", text)
    if m:
        return first(lambda o: not o.is_add() and not o.is_delete() and _spelled(o) == m.group(1))
    m = re.search(r"Multiple values for ([^.\s]+)\.", text)
    if m:
        return first(lambda o: o.is_add() and o.key_or_group == m.group(1))
    m = re.search(r"Could not find '([^'/]+)/([^']+)'", text)
    if m:
        return first(lambda o: o.key_or_group == m.group(1) and str(o.value()) == m.group(2))
    for pat in (
        r"Ambiguous value for argument '(.+)'",
        r"Sweep parameters '(.+)' requires",
        r"force-add of config groups is not supported: '(.+)'",
        r"Error merging override (.+)",
        r"Override (.+) looks like a config group",
    ):
        m = re.search(pat, text)
        if m:
            return next((i for i, w in enumerate(words) if w == m.group(1)), None)
    return None


def hydra_compose(config_name: str | None, words: list[str]):
    """Plain `hydra.compose` (inside an active initialize_config_dir): (config, None) or (None, exception)."""
    from hydra import compose

    try:
        return compose(config_name, overrides=list(words)), None
    except Exception as ex:  # noqa: BLE001
        return None, ex


def outcome_of(cfg, ex: BaseException | None, words: list[str], deep: bool = True) -> Outcome:
    if ex is not None:
        return Outcome(
            False, error_type=type(ex).__name__, error_word=hydra_culprit(ex, words), message=_chain(ex).splitlines()[0]
        )
    return Outcome(True, *_snapshot(cfg, deep))


def hydra_outcome(config_name: str | None, words: list[str], deep: bool = True) -> Outcome:
    return outcome_of(*hydra_compose(config_name, words), words, deep)


def lint_outcome(comp, launch, deep: bool = True) -> Outcome:
    """verl-lint's Composition as an Outcome: the config, or the first reported error."""
    if comp.diagnostics:
        errs = []
        for d in comp.diagnostics:
            idx = next((i for i, w in enumerate(launch.overrides) if w.span == d.span), None)
            errs.append((d.code, idx, d.message))
        code, idx, msg = errs[0]
        return Outcome(False, error_type=code, error_word=idx, message=msg, all_errors=errs)
    return Outcome(True, *_snapshot(comp.config, deep))


# Which verl-lint codes can stand for which Hydra exception.
CODES_FOR = {
    "OverrideParseException": {"VL102"},
    "ConfigCompositionException": {"VL101", "VL103", "VL104", "VL105", "VL106"},
    "MissingConfigException": {"VL106"},
}


def compare(plain: Outcome, fast: Outcome) -> str | None:
    """None when verl-lint's outcome matches Hydra's, else a one-line reason."""
    if plain.ok != fast.ok:
        if plain.ok:
            return f"Hydra composes, verl-lint reports {fast.error_type} at word {fast.error_word}: {fast.message}"
        return f"Hydra fails ({plain.error_type}: {plain.message}), verl-lint composes"
    if plain.ok:
        if plain.container != fast.container:
            return "configs differ (to_container)"
        if plain.yaml is not None and fast.yaml is not None and plain.yaml != fast.yaml:
            return "configs differ (to_yaml / key order)"
        if plain.signature is not None and fast.signature is not None and plain.signature != fast.signature:
            diff = (
                next((a, b) for a, b in zip(plain.signature, fast.signature) if a != b)
                if len(plain.signature) == len(fast.signature)
                else "length"
            )
            return f"node signatures differ: {diff}"
        return None
    if fast.error_type not in CODES_FOR.get(plain.error_type, {"VL105", "VL106"}):
        return (
            f"error kind: Hydra {plain.error_type} ({plain.message}), verl-lint first {fast.error_type} "
            f"({fast.message})"
        )
    if plain.error_word is None:
        return f"cannot tell which override Hydra's error is about: {plain.error_type}: {plain.message}"
    if plain.error_word != fast.error_word:
        return (
            f"first error: Hydra at word {plain.error_word} ({plain.error_type}: {plain.message}); "
            f"verl-lint first at word {fast.error_word} ({fast.error_type}: {fast.message})"
        )
    return None


# -------------------------------------------------------------- front end ----


@dataclass
class Item:
    script: str  # path, relative to the corpus
    spec: object  # make_corpus.LaunchSpec
    launch: object  # verl_lint.model.Launch
    app: object  # verl_lint.launch.locate.HydraApp
    corpus: str = ""

    @property
    def words(self) -> list[str]:
        return [w.text for w in self.launch.overrides]


def front_end(corpus: Path, specs, tree) -> tuple[list[Item], list[str], list[float]]:
    """shell -> launches -> locate for every script; (items, problems, per-script seconds)."""
    from verl_lint.launch.locate import locate_app
    from verl_lint.launch.recognise import launches
    from verl_lint.shell import evaluate

    items, problems, times = [], [], []
    for spec in specs:
        path = corpus / spec.path
        t0 = time.perf_counter()
        text = path.read_text()
        result = evaluate(str(path), text, [path.resolve().parent])
        found = launches(result.commands, str(path))
        apps = [locate_app(la, tree) for la in found]
        times.append(time.perf_counter() - t0)
        if len(found) != len(spec.launches):
            problems.append(f"{spec.path}: {len(found)} launches found, {len(spec.launches)} written")
            continue
        for ls, la, app in zip(spec.launches, found, apps):
            got = [w.text for w in la.overrides]
            if got != ls.words:
                diff = [(a, b) for a, b in zip(got, ls.words) if a != b][:2]
                problems.append(
                    f"{spec.path}:{la.entry_span.line}: shell words differ from bash's (verl-lint, bash): "
                    f"{diff or (len(got), len(ls.words))}"
                )
            if app is None:
                problems.append(f"{spec.path}:{la.entry_span.line}: no Hydra app located")
                continue
            items.append(Item(spec.path, ls, la, app, str(corpus)))
    return items, problems, times


# ----------------------------------------------------------------- timing ----


def _ms(xs) -> str:
    return f"{statistics.median(xs) * 1e3:8.2f} ms"


def _cpu() -> float:
    return time.thread_time()


@dataclass
class Pass:
    name: str
    wall: list = field(default_factory=list)
    cpu: list = field(default_factory=list)

    def add(self, w, c):
        self.wall.append(w)
        self.cpu.append(c)

    def line(self) -> str:
        tot = sum(self.wall)
        return (
            f"  {self.name:<34} median {_ms(self.wall)} wall {_ms(self.cpu)} cpu | total {tot:7.2f} s"
            f" | {len(self.wall) / tot:7.1f} launches/s"
        )


def run_passes(items: list[Item], config_dir: Path, cache_root: Path, plain_every: int = 1, tree=None) -> dict:
    from hydra import initialize_config_dir

    from verl_lint.config.compose import Composer
    from verl_lint.runner import _batch_collector, lint_file
    from verl_lint.runs import Options

    results: dict = {
        "mismatches": [],
        "plain": Pass("plain hydra.compose"),
        "cold": Pass("verl-lint cold (empty caches)"),
        "warm_disk": Pass("verl-lint warm disk (new process)"),
        "warm_mem": Pass("verl-lint warm memory (same Composer)"),
        "lint": Pass("verl-lint check, every rule, cold"),
    }
    cold = Composer(cache=True, cache_root=cache_root)
    linter = Composer(cache=True, cache_root=cache_root / "lint")
    options = Options(verl_tree=tree, timeout=0)
    per_script: dict[str, int] = {}
    for it in items:
        per_script[it.script] = per_script.get(it.script, 0) + 1
    results["lint_codes"] = {}
    fingerprints = []
    n_ok = n_err = compared = 0
    # Plain compose runs interleaved with the cold passes so that all see the same machine load.
    # The full lint (`verl-lint check` as one process runs it, -j 1: shell, composition and every
    # rule, with the on-disk caches empty) runs once per script, before its first launch; its
    # time is shared among the script's launches.
    # The collector set as `verl-lint check` sets it for its files (runner._batch_collector), for
    # plain Hydra too.
    with initialize_config_dir(config_dir=str(config_dir), version_base=None, job_name="main_ppo"), _batch_collector():
        for i, it in enumerate(items):
            if tree is not None and it.script not in results["lint_codes"]:
                # What the plain and cold passes left for the collector is collected here, untimed:
                # the check pays for its own garbage (each launch's, pipeline._collected_after),
                # not for Hydra's configs of the launches before (which would favour neither side).
                gc.collect()
                t0, c0 = time.perf_counter(), _cpu()
                report = lint_file(Path(it.corpus) / it.script, options, linter)
                w, c, n = time.perf_counter() - t0, _cpu() - c0, per_script[it.script]
                for _ in range(n):
                    results["lint"].add(w / n, c / n)
                results["lint_codes"][it.script] = sorted(d.code for d in report.diagnostics)
            t0, c0 = time.perf_counter(), _cpu()
            comp = cold.compose(it.app, it.launch.overrides, it.launch.entry_span)
            results["cold"].add(time.perf_counter() - t0, _cpu() - c0)
            fast = lint_outcome(comp, it.launch)
            fingerprints.append((fast.ok, fast.yaml, fast.error_type, fast.error_word))
            if i % plain_every:
                continue
            t0, c0 = time.perf_counter(), _cpu()
            cfg, ex = hydra_compose(it.app.config_name, it.words)
            results["plain"].add(time.perf_counter() - t0, _cpu() - c0)
            plain = outcome_of(cfg, ex, it.words)  # snapshots are taken outside the timed region
            del cfg
            if plain.ok:
                n_ok += 1
            else:
                n_err += 1
            compared += 1
            why = compare(plain, fast)
            if why:
                results["mismatches"].append(f"{it.script}:{it.launch.entry_span.line}: {why}")
    results["cold_stats"] = dict(cold.stats)
    results["n_ok"], results["n_err"], results["compared"] = n_ok, n_err, compared
    # warm, disk: what the next `verl-lint check` process sees
    disk = Composer(cache=True, cache_root=cache_root)
    for it, fp in zip(items, fingerprints):
        t0, c0 = time.perf_counter(), _cpu()
        comp = disk.compose(it.app, it.launch.overrides, it.launch.entry_span)
        results["warm_disk"].add(time.perf_counter() - t0, _cpu() - c0)
        o = lint_outcome(comp, it.launch)
        if (o.ok, o.yaml, o.error_type, o.error_word) != fp:
            results["mismatches"].append(
                f"{it.script}:{it.launch.entry_span.line}: warm (disk) result differs from the cold one"
            )
    results["disk_stats"] = dict(disk.stats)
    for it, fp in zip(items, fingerprints):
        t0, c0 = time.perf_counter(), _cpu()
        comp = cold.compose(it.app, it.launch.overrides, it.launch.entry_span)
        results["warm_mem"].add(time.perf_counter() - t0, _cpu() - c0)
        o = lint_outcome(comp, it.launch, deep=False)
        if (o.ok, o.error_type, o.error_word) != fp[:1] + fp[2:]:
            results["mismatches"].append(
                f"{it.script}:{it.launch.entry_span.line}: warm (memory) result differs from the cold one"
            )
    return results


# -------------------------------------------------------------------- CLI ----


def _verl_lint_cmd() -> list[str]:
    exe = Path(sys.executable).parent / "verl-lint"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "verl_lint.cli"]


# A small intermediate process starts the CLI and reports its peak RSS. (Measured from here,
# ru_maxrss would include this process's own RSS: Linux carries a forked child's high-water
# mark across exec.)
_SPAWN = """
import os, sys, time
t0 = time.perf_counter()
pid = os.posix_spawnp(sys.argv[1], sys.argv[1:], os.environ)
_, status, ru = os.wait4(pid, 0)
sys.stderr.write("\\nBENCH %f %d\\n" % (time.perf_counter() - t0, ru.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_cli(args: list[str], env: dict) -> tuple[float, int, int]:
    """(seconds from process start to exit, exit code, peak RSS in KiB of the CLI process tree)."""
    r = subprocess.run(
        [sys.executable, "-c", _SPAWN, *_verl_lint_cmd(), *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=REPO,
        text=True,
    )
    m = re.search(r"BENCH ([0-9.]+) (\d+)\s*$", r.stderr)
    if not m or r.returncode not in (0, 1):  # 2: an input error, and the timing measures nothing
        raise RuntimeError(f"verl-lint {' '.join(args)} did not run (exit {r.returncode}): {r.stderr[-500:]}")
    return float(m.group(1)), r.returncode, int(m.group(2))


def cli_section(corpus: Path, specs, version: str, release_root: Path) -> list[str]:
    lines = []
    with tempfile.TemporaryDirectory(prefix="verl-lint-bench-cache-") as tmp:
        # The release is already unpacked in the user cache: link it, so only the bases start cold.
        (Path(tmp) / "releases").mkdir()
        os.symlink(release_root, Path(tmp) / "releases" / release_root.name)
        env = dict(os.environ, VERL_LINT_CACHE_DIR=tmp, NO_COLOR="1")
        one = str(corpus / specs[0].path)
        for label in ("cold", "warm"):
            dt, rc, rss = run_cli(["check", one, "--verl", version], env)
            lines.append(
                f"  one script ({label} cache)            {dt * 1e3:8.0f} ms   exit {rc}   peak RSS {rss / 1024:6.1f} "
                "MiB"
            )
        shutil.rmtree(Path(tmp) / "bases", ignore_errors=True)
        n = sum(len(s.launches) for s in specs)
        for label in ("cold", "warm"):  # --no-ignore: the corpus is in bench/corpus/, which .gitignore lists
            dt, rc, rss = run_cli(["check", str(corpus), "--verl", version, "--no-ignore"], env)
            lines.append(
                f"  whole tree, {len(specs)} scripts / {n} launches ({label})"
                f" {dt:6.2f} s   exit {rc}   peak RSS {rss / 1024:6.1f} MiB   {n / dt:6.1f} launches/s"
            )
        dt, rc, rss = run_cli(["check", str(corpus), "--verl", version, "--no-cache", "--no-ignore"], env)
        lines.append(
            f"  whole tree, --no-cache                  {dt:6.2f} s   exit {rc}   peak RSS {rss / 1024:6.1f} MiB"
        )
    return lines


def _importtime(argv: list[str]) -> list[tuple[int, int, int, str]]:
    """(self us, cumulative us, depth, module) from `python -X importtime ...`."""
    r = subprocess.run([sys.executable, "-X", "importtime", *argv], capture_output=True, text=True, cwd=REPO)
    rows = []
    for line in r.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if m:
            rows.append((int(m.group(1)), int(m.group(2)), (len(m.group(3)) - 1) // 2, m.group(4)))
    return rows


def importtime_section(script: str | None = None, version: str = "", top: int = 8) -> list[str]:
    out = []
    runs = [("import verl_lint.cli", ["-c", "import verl_lint.cli"])]
    if script:
        runs.append(
            (
                f"verl-lint check ONE_SCRIPT --verl {version}",
                ["-m", "verl_lint.cli", "check", script, "--verl", version],
            )
        )
    for label, argv in runs:
        rows = _importtime(argv)
        total = sum(r[0] for r in rows)
        out.append(
            f"  `{label}`: {total / 1e3:.1f} ms in imports ({len(rows)} modules); top-level imports by cumulative time:"
        )
        for _self_us, cum_us, _depth, name in sorted((r for r in rows if r[2] == 0), key=lambda r: -r[1])[:top]:
            out.append(f"    {cum_us / 1e3:7.1f} ms  {name}")
        heavy = sorted(
            {r[3].split(".")[0] for r in rows}
            & {"hydra", "omegaconf", "yaml", "antlr4", "tree_sitter", "tree_sitter_bash", "torch"}
        )
        out.append(f"    heavy packages imported: {', '.join(heavy) or 'none'}")
    return out


# ---------------------------------------------------------------- profile ----


def profile_section(items: list[Item], top: int = 15) -> list[str]:
    import cProfile
    import io
    import pstats

    from verl_lint.config import compose as compose_mod
    from verl_lint.config.compose import Composer

    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        composer = Composer(cache=True, cache_root=Path(tmp))
        # phase timers (wall clock, no profiler)
        acc = {
            "parse (ANTLR, memoised per line)": 0.0,
            "base: compose on miss": 0.0,
            "base: disk read": 0.0,
            "base: pickle.loads + lookup": 0.0,
            "apply value overrides (Hydra)": 0.0,
        }
        h = compose_mod._hydra()
        orig_apply = h.ConfigLoaderImpl._apply_overrides_to_config
        orig = {n: getattr(composer, n) for n in ("parse", "_compose_base", "_load_disk", "_base")}

        def timed(fn, name):
            def wrapper(*a, **k):
                t = time.perf_counter()
                try:
                    return fn(*a, **k)
                finally:
                    acc[name] += time.perf_counter() - t

            return wrapper

        composer.parse = timed(orig["parse"], "parse (ANTLR, memoised per line)")
        composer._compose_base = timed(orig["_compose_base"], "base: compose on miss")
        composer._load_disk = timed(orig["_load_disk"], "base: disk read")
        composer._base = timed(orig["_base"], "base: pickle.loads + lookup")
        h.ConfigLoaderImpl._apply_overrides_to_config = staticmethod(timed(orig_apply, "apply value overrides (Hydra)"))
        t0 = time.perf_counter()
        try:
            for it in items:
                composer.compose(it.app, it.launch.overrides, it.launch.entry_span)
        finally:
            h.ConfigLoaderImpl._apply_overrides_to_config = staticmethod(orig_apply)
        total = time.perf_counter() - t0
        acc["base: pickle.loads + lookup"] -= acc["base: compose on miss"] + acc["base: disk read"]
        n = len(items)
        lines.append(f"  cold pass, {n} launches, {total:.2f} s wall ({composer.stats}); per launch:")
        for k, v in acc.items():
            lines.append(f"    {k:<36} {v / n * 1e3:7.2f} ms  ({v / total:5.1%})")
        other = total - sum(acc.values())
        lines.append(
            f"    {'other (classify, setbase, bookkeeping)':<36} {other / n * 1e3:7.2f} ms  ({other / total:5.1%})"
        )

    # cProfile of a second cold pass (new Composer and disk cache; imports/plugins already warm)
    with tempfile.TemporaryDirectory() as tmp:
        composer = Composer(cache=True, cache_root=Path(tmp))
        prof = cProfile.Profile()
        prof.enable()
        for it in items:
            composer.compose(it.app, it.launch.overrides, it.launch.entry_span)
        prof.disable()
        for order in ("tottime", "cumulative"):
            s = io.StringIO()
            pstats.Stats(prof, stream=s).sort_stats(order).print_stats(top)
            body = s.getvalue().splitlines()
            start = next(i for i, l in enumerate(body) if l.strip().startswith("ncalls"))
            lines.append(f"  cProfile, cold pass, top {top} by {order}:")
            lines += ["    " + l for l in body[start : start + top + 1]]

    # memoising hydra.version.setbase / JobRuntime.set?
    import timeit

    from hydra import version

    from verl_lint.config.compose import _hydra

    hh = _hydra()
    n = 20000
    t_setbase = timeit.timeit(lambda: version.setbase(None), number=n) / n
    t_job = timeit.timeit(lambda: hh.JobRuntime.instance().set("name", "main_ppo"), number=n) / n
    lines.append(
        f"  hydra.version.setbase(None): {t_setbase * 1e6:.2f} us/call; JobRuntime.instance().set(...): "
        f"{t_job * 1e6:.2f} us/call"
    )
    return lines


# ------------------------------------------------------------------- main ----


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="verl-lint composition benchmark")
    ap.add_argument("--verl", default="0.9.1")
    ap.add_argument("--corpus", default=str(HERE / "corpus"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--reuse", action="store_true", help="reuse an existing corpus (manifest.json) instead of regenerating it"
    )
    ap.add_argument("--plain-every", type=int, default=1, help="plain-compose only every Nth launch (default: all)")
    ap.add_argument("--skip-cli", action="store_true")
    ap.add_argument("--no-lint", action="store_true", help="skip the cold pass of the full lint (every rule)")
    ap.add_argument("--profile", action="store_true", help="also profile the cold path (cProfile top 15, phase timers)")
    args = ap.parse_args(argv)

    from verl_lint.launch.locate import release_tree

    t_start = time.perf_counter()
    tree = release_tree(args.verl)
    config_dir = (tree.root / "verl" / "trainer" / "config").resolve()
    corpus = Path(args.corpus)
    t0 = time.perf_counter()
    if args.reuse and (corpus / "manifest.json").is_file():
        specs = make_corpus.load_manifest(corpus)
    else:
        specs = make_corpus.generate(corpus, config_dir, seed=args.seed)
    t_gen = time.perf_counter() - t0
    n_launch = sum(len(s.launches) for s in specs)
    print(f"verl-lint benchmark — verl {tree.version} ({config_dir})")
    print(
        f"corpus: {len(specs)} scripts, {n_launch} launches, "
        f"{sum(1 for s in specs for l in s.launches if l.errors)} with deliberate errors (generated in {t_gen:.1f} s) "
        f"-> {corpus}"
    )

    items, problems, fe_times = front_end(corpus, specs, tree)
    print(f"front end (shell + launches + locate): median {_ms(fe_times)} per script, total {sum(fe_times):.2f} s")

    with tempfile.TemporaryDirectory(prefix="verl-lint-bench-bases-") as tmp:
        # The full lint's own caches (reader index, guards, tables, results) start empty too; the
        # downloaded release is linked in.
        (Path(tmp) / "releases").mkdir()
        os.symlink(tree.root, Path(tmp) / "releases" / tree.root.name)
        saved = os.environ.get("VERL_LINT_CACHE_DIR")
        os.environ["VERL_LINT_CACHE_DIR"] = tmp
        try:
            res = run_passes(items, config_dir, Path(tmp), args.plain_every, None if args.no_lint else tree)
        finally:
            if saved is None:
                os.environ.pop("VERL_LINT_CACHE_DIR", None)
            else:
                os.environ["VERL_LINT_CACHE_DIR"] = saved
    mism = problems + res["mismatches"]
    print()
    print(f"per launch ({len(items)} launches; plain compose on {res['compared']}):")
    for k in ("plain", "cold", "warm_disk", "warm_mem", "lint"):
        if res[k].wall:
            print(res[k].line())
    p, c, w = res["plain"], res["cold"], res["warm_disk"]
    ratio_cold = statistics.median(p.wall) / statistics.median(c.wall)
    ratio_cold_cpu = statistics.median(p.cpu) / statistics.median(c.cpu)
    ratio_warm = statistics.median(p.wall) / statistics.median(w.wall)
    plain_total = statistics.mean(p.wall) * len(items)
    print(f"  base composes: cold {res['cold_stats']}, warm disk {res['disk_stats']}")
    print()
    print(
        f"RATIO (median per launch, plain / verl-lint): cold {ratio_cold:.1f}x wall, {ratio_cold_cpu:.1f}x cpu; warm "
        f"{ratio_warm:.1f}x"
    )
    print(
        f"RATIO (whole pass incl. base misses): cold {plain_total / sum(c.wall):.1f}x, warm "
        f"{plain_total / sum(w.wall):.1f}x"
    )
    lint = res["lint"]
    ratio_lint = ratio_lint_cpu = None
    if lint.wall:
        ratio_lint = statistics.median(p.wall) / statistics.median(lint.wall)
        ratio_lint_cpu = statistics.median(p.cpu) / statistics.median(lint.cpu)
        print(
            f"RATIO cold check, every rule (median per launch, plain compose / verl-lint): {ratio_lint:.1f}x wall, "
            f"{ratio_lint_cpu:.1f}x cpu;"
            f" whole pass incl. base misses and one-time indexes: {plain_total / sum(lint.wall):.1f}x"
        )
    fe_total = sum(fe_times)
    print(
        f"launches/second incl. front end: cold {len(items) / (sum(c.wall) + fe_total):.1f}, warm "
        f"{len(items) / (sum(w.wall) + fe_total):.1f}"
        f" (plain Hydra: {len(items) / (plain_total + fe_total):.1f})"
    )
    n_bad = len(res["mismatches"])
    print(
        f"IDENTICAL: {res['compared'] - n_bad}/{res['compared']} launches "
        f"({res['n_ok']} composed, {res['n_err']} failing in Hydra); front-end problems: {len(problems)}"
    )
    for m in mism[:30]:
        print("  MISMATCH", m)
    print(
        "peak RSS of this process (incl. plain Hydra): "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} MiB"
    )

    if not args.skip_cli:
        print()
        print("CLI (process start to exit; VERL_LINT_CACHE_DIR on a temp dir):")
        for line in cli_section(corpus, specs, args.verl, tree.root):
            print(line)
        print()
        print("imports:")
        for line in importtime_section(str(corpus / specs[0].path), args.verl):
            print(line)
    if args.profile:
        print()
        print("profile of the cold path:")
        for line in profile_section(items):
            print(line)
    print(f"\nbenchmark wall time {time.perf_counter() - t_start:.1f} s")
    ok = not mism and ratio_cold >= 20 and (ratio_lint is None or ratio_lint >= 20)
    lint_part = f", cold check with every rule {ratio_lint:.1f}x" if ratio_lint is not None else ""
    print(
        "RESULT:",
        "PASS" if ok else "FAIL",
        f"(cold compose ratio {ratio_cold:.1f}x{lint_part}, each needs >= 20x; {len(mism)} mismatches)",
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
