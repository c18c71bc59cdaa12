"""The on-disk cache of composed bases: warm runs hit it with identical results; `cache clean`; `--no-cache`."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from verl_lint import cache
from verl_lint.cache import cache_dir
from verl_lint.config.compose import Composer
from verl_lint.launch.locate import locate_app
from verl_lint.launch.recognise import launches
from verl_lint.shell import evaluate

SCRIPT = (
    "MODEL=${MODEL:-/models/Qwen2.5-7B}\n"
    "python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo actor_rollout_ref.rollout.name=vllm actor_rollout_ref.model.path=$MODEL \\\n"
    "    trainer.nnodes=2 trainer.nnodez=4 +trainer.lint_marker=1 ~trainer.val_before_train\n"
)


@pytest.fixture
def cache_root(verl_trees, tmp_path, monkeypatch):
    """VERL_LINT_CACHE_DIR on an empty temp dir (the releases stay where the fixture put them)."""
    root = tmp_path / "cache"
    monkeypatch.setenv("VERL_LINT_CACHE_DIR", str(root))
    assert cache_dir() == root
    return root


def _launch(tmp_path: Path, verl_trees, text: str = SCRIPT, version: str = "0.9.1"):
    p = tmp_path / "run.sh"
    p.write_text(text)
    [la] = launches(evaluate(str(p), text).commands, str(p))
    return la, locate_app(la, verl_trees[version])


def _result(comp):
    return (
        OmegaConf.to_yaml(comp.config) if comp.config is not None else None,
        [(d.code, d.span, d.message) for d in comp.diagnostics],
        [(o.line, o.kind, o.ok) for o in comp.overrides],
    )


@pytest.mark.slow
def test_warm_run_hits_the_disk_cache_with_identical_results_and_clean_forgets(cache_root, tmp_path, verl_trees):
    la, app = _launch(tmp_path, verl_trees)
    cold = Composer()  # default: the disk cache under cache_dir()/bases
    first = cold.compose(app, la.overrides, la.entry_span)
    assert cold.stats == {"base_hits": 0, "base_disk_hits": 0, "base_misses": 1}
    assert [d.code for d in first.diagnostics] == ["VL101"]  # trainer.nnodez; the rest still composed
    stored = list((cache_root / "bases").glob("*.pickle"))
    assert len(stored) == 1

    warm = Composer()  # a new process: nothing in memory
    second = warm.compose(app, la.overrides, la.entry_span)
    assert warm.stats["base_disk_hits"] == 1 and warm.stats["base_misses"] == 0
    assert _result(second) == _result(first)
    assert OmegaConf.to_container(second.config, resolve=False) == OmegaConf.to_container(first.config, resolve=False)
    assert OmegaConf.is_struct(second.config)
    # the composed config is the caller's own copy: changing it does not leak into the cache
    second.config.trainer.nnodes = 99
    assert warm.compose(app, la.overrides, la.entry_span).config.trainer.nnodes == 2

    # `cache clean` keeps downloaded releases
    release = cache_root / "releases" / "verl-0.0.0" / "verl" / "trainer"
    release.mkdir(parents=True)
    (release / "main_ppo.py").write_text("x = 1\n")
    stored_size = stored[0].stat().st_size
    assert cache.clean() == (1, stored_size)
    assert not (cache_root / "bases").exists()
    assert (release / "main_ppo.py").is_file()

    after = Composer()
    third = after.compose(app, la.overrides, la.entry_span)
    assert after.stats["base_misses"] == 1 and after.stats["base_disk_hits"] == 0
    assert _result(third) == _result(first)


def _written(root: Path) -> int:
    """How many entries verl-lint wrote in the derived folders (what `clean` removes)."""
    return sum(1 for name in cache.DERIVED for _ in (root / name).glob("*.pickle"))


def test_clean_all_removes_only_marked_entries(cache_root):
    """Everything verl-lint creates in the cache is tagged; `clean --all` (a real process)
    removes only that, whatever else sits in the cache directory."""
    assert cache.memo("bases", "x", lambda: {"a": 1}, dict) == {"a": 1}  # a marked folder with one entry
    [entry] = (cache_root / "bases").glob("*.pickle")
    assert cache.is_marked(cache_root / "bases")
    assert (
        (cache_root / "bases" / "CACHEDIR.TAG").read_bytes().startswith(b"Signature: 8a477f597d28d172789f06886806bc55")
    )
    releases = cache.make_dir(cache_root / "releases")
    ours = cache.new_entry(releases)  # how release_tree creates a release, then renames it into place
    (ours / "verl").mkdir()
    (ours / "verl" / "version").write_text("0.9.1\n")
    ours.rename(releases / "verl-0.9.1")
    # Not verl-lint's, though named like its entries: never removed.
    (cache_root / "bases" / "notes.txt").write_text("not ours\n")
    (cache_root / "bases" / "mine").mkdir()
    (cache_root / "bases" / "mine" / ("a" * 32 + ".pickle")).write_bytes(b"x")
    (releases / "verl-0.7.1" / "verl").mkdir(parents=True)  # an unmarked release-like directory
    (releases / "keep-me").write_text("x\n")
    (cache_root / "engine_args").mkdir()  # an unmarked folder with a hash-named file
    (cache_root / "engine_args" / ("b" * 32 + ".pickle")).write_bytes(b"x")
    (cache_root / "wheels").mkdir()
    (cache_root / "wheels" / "vllm-0.1.0-py3-none-any.whl").write_bytes(b"x")

    proc = subprocess.run(
        [sys.executable, "-m", "verl_lint.cli", "cache", "clean", "--all"], capture_output=True, text=True
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout.startswith("removed 3 files")  # the entry, and the release's version file and tag
    assert not entry.exists() and not (releases / "verl-0.9.1").exists()
    for kept in ("bases/notes.txt", f"bases/mine/{'a' * 32}.pickle", "releases/verl-0.7.1/verl", "releases/keep-me",
                 f"engine_args/{'b' * 32}.pickle", "wheels/vllm-0.1.0-py3-none-any.whl"):  # fmt: skip
        assert (cache_root / kept).exists(), kept
    assert cache.is_marked(cache_root / "bases")  # still holds other files: kept, still tagged
    assert cache.clean(releases=True) == (0, 0)  # idempotent


def test_clean_removes_marked_folders_left_empty(cache_root):
    cache.memo("tables", "y", lambda: [1], list)
    size = cache.entry("tables", "y").stat().st_size
    assert cache.clean() == (1, size)
    assert not (cache_root / "tables").exists()


@pytest.mark.slow
def test_crafted_verl_value_is_rejected_before_it_becomes_a_path(tmp_path, cache_root):
    """`--verl ../../../../victim` would name a directory outside the cache; it is refused as
    not a version, and nothing outside (or inside) the cache is created or removed."""
    victim = tmp_path / "victim"
    (victim / "verl" / "trainer").mkdir(parents=True)
    (victim / "data.txt").write_text("precious\n")
    script = tmp_path / "run.sh"
    script.write_text("echo hi\n")
    for value in ("../../../../victim", "0.9.1/../../../../victim", "/tmp/x", "0.9.1 ; rm -rf /"):
        for cmd in (["check", str(script), "--verl", value], ["doctor", "--verl", value]):
            proc = subprocess.run(
                [sys.executable, "-m", "verl_lint.cli", *cmd], capture_output=True, text=True, cwd=tmp_path
            )
            assert proc.returncode == 2, (cmd, proc.stdout, proc.stderr)
            assert proc.stderr.splitlines() == [
                f"verl-lint{' doctor' if cmd[0] == 'doctor' else ''}: error: --verl: {value!r} is not a version (e.g. 0.9.1)"
            ]
    assert (victim / "data.txt").read_text() == "precious\n" and (victim / "verl" / "trainer").is_dir()
    assert not cache_root.exists()  # not even the releases folder


def test_clean_on_a_missing_cache_dir(cache_root):
    assert not cache_root.exists()
    assert cache.clean(releases=True) == (0, 0)


@pytest.mark.slow
def test_no_cache_reads_and_writes_nothing(cache_root, tmp_path, verl_trees):
    la, app = _launch(tmp_path, verl_trees)
    with_cache = Composer()
    expected = _result(with_cache.compose(app, la.overrides, la.entry_span))
    stored = list((cache_root / "bases").glob("*.pickle"))
    assert len(stored) == 1
    stored[0].write_bytes(b"garbage")  # would be detected as corrupt if it were read at all
    before = {p: p.stat().st_mtime_ns for p in (cache_root / "bases").iterdir()}

    no_cache = Composer(cache=False)
    assert _result(no_cache.compose(app, la.overrides, la.entry_span)) == expected
    assert no_cache.stats == {"base_hits": 0, "base_disk_hits": 0, "base_misses": 1}
    assert {p: p.stat().st_mtime_ns for p in (cache_root / "bases").iterdir()} == before


@pytest.mark.slow
def test_corrupt_cache_entry_is_a_miss(cache_root, tmp_path, verl_trees):
    la, app = _launch(tmp_path, verl_trees)
    expected = _result(Composer().compose(app, la.overrides, la.entry_span))
    [stored] = (cache_root / "bases").glob("*.pickle")
    stored.write_bytes(stored.read_bytes()[:100])  # truncated
    c = Composer()
    assert _result(c.compose(app, la.overrides, la.entry_span)) == expected
    assert c.stats["base_misses"] == 1


@pytest.mark.slow
def test_cli_no_cache_flag_and_cache_command(cache_root, tmp_path, verl_trees, capsys):
    from verl_lint import cli

    p = tmp_path / "run.sh"
    p.write_text(SCRIPT)
    root = str(verl_trees["0.9.1"].root)
    assert cli.main(["check", str(p), "--verl-root", root, "--no-cache"]) == 1  # VL101 is a finding
    assert not (cache_root / "bases").exists()
    assert cli.main(["check", str(p), "--verl-root", root]) == 1
    assert len(list((cache_root / "bases").glob("*.pickle"))) == 1
    capsys.readouterr()

    # `verl-lint cache clean` through cache.add_arguments/run (and through the CLI once it is wired)
    parser = argparse.ArgumentParser(prog="verl-lint cache")
    cache.add_arguments(parser)
    assert cache.run(parser.parse_args(["dir"])) == 0
    assert str(cache_root) in capsys.readouterr().out
    written = _written(cache_root)  # the base, and whatever tables this process had not loaded yet
    assert cache.run(parser.parse_args(["clean"])) == 0
    assert f"removed {written} file" in capsys.readouterr().out
    assert not (cache_root / "bases").exists()
    cli.main(["check", str(p), "--verl-root", root])
    written = _written(cache_root)
    assert cli.main(["cache", "clean", "--all"]) == 0
    assert f"removed {written} file" in capsys.readouterr().out
    assert not (cache_root / "bases").exists()


def _cli(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess:
    import os

    return subprocess.run(
        [sys.executable, "-m", "verl_lint.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **env},
    )


def test_cache_keys_follow_the_code_that_produced_them(tmp_path):
    """Every cached value is keyed on a digest of verl-lint's own files: changing one (a knowledge
    table touched, a module edited, in a copy of the package) makes the old entries unreachable."""
    import os
    import shutil

    src = Path(cache.__file__).resolve().parent
    copy = tmp_path / "src"
    shutil.copytree(src, copy / "verl_lint", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(src.parent / "rules", copy / "verl_lint_knowledge")  # as it installs
    probe = (
        "import os, verl_lint.cache as c; print(c.__file__); print(c.code_digest()); "
        "print(c.memo('tables', 'probe', lambda: os.environ['VALUE'], str))"
    )

    def run(value: str) -> list[str]:
        env = {**os.environ, "PYTHONPATH": str(copy), "VERL_LINT_CACHE_DIR": str(tmp_path / "cache"), "VALUE": value}
        proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.splitlines()

    where, first, value = run("one")
    assert where.startswith(str(copy)) and value == "one"
    assert run("two")[1:] == [first, "one"]  # the same code: the cached value
    table = copy / "verl_lint_knowledge" / "env_vars.yaml"
    st = table.stat()
    os.utime(table, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    _, touched, value = run("three")
    assert touched != first and value == "three"
    with open(copy / "verl_lint" / "shell.py", "a") as f:
        f.write("# edited\n")
    _, edited, value = run("four")
    assert edited not in (first, touched) and value == "four"


_ALARM_AT: list = []  # (predicate on an opened path,) while armed; audit hooks cannot be removed


def _alarm_hook(event: str, args: tuple) -> None:
    if event == "open" and _ALARM_AT and isinstance(args[0], str) and _ALARM_AT[0](args[0]):
        _ALARM_AT.clear()
        signal.raise_signal(signal.SIGALRM)  # the step's own alarm, at this point of its work


@contextmanager
def alarm_when_opening(predicate):
    """Fire the running step's time limit when the first file matching `predicate` is opened:
    the limit ends the step at a chosen point of its work, whatever the machine's load (a short
    timer raced the work: VL106 instead of VL005 once on a busy machine)."""
    if not getattr(alarm_when_opening, "installed", False):
        sys.addaudithook(_alarm_hook)
        alarm_when_opening.installed = True
    _ALARM_AT[:] = [predicate]
    try:
        yield
    finally:
        _ALARM_AT.clear()


@pytest.mark.slow
def test_a_timeout_during_composition_is_never_cached(cache_root, tmp_path, verl_trees):
    """The per-launch time limit firing while a base composes (when Hydra's composition opens the
    first of ppo_trainer's YAML files) is VL005 for that run, and nothing is stored: the next run (same
    process, then a new one on the same cache) composes it."""
    from verl_lint.runner import lint_file
    from verl_lint.runs import Options

    tree = verl_trees["0.9.1"]
    warm = tmp_path / "warm.sh"
    warm.write_text(SCRIPT.replace("main_ppo ", "main_ppo --config-name ppo_megatron_trainer "))
    composer = Composer()
    lint_file(warm, Options(verl_tree=tree), composer)
    script = tmp_path / "run.sh"
    script.write_text(SCRIPT)
    config_dir = str((tree.root / "verl" / "trainer" / "config").resolve())

    def in_hydra_composing(path: str) -> bool:  # a YAML file Hydra's composition opens (not another reader's)
        frame = sys._getframe()
        while frame is not None and frame.f_code.co_name != "load_configuration":
            frame = frame.f_back
        return frame is not None and path.startswith(config_dir) and path.endswith(".yaml")

    with alarm_when_opening(in_hydra_composing):
        timed = lint_file(script, Options(verl_tree=tree, timeout=600), composer)
    assert [d.code for d in timed.diagnostics] == ["VL005"]
    assert composer.stats["base_misses"] == 2  # the timed run was composing its base when stopped
    assert len(composer._bases) == 1 and len(list((cache_root / "bases").glob("*.pickle"))) == 1  # the warm-up's

    again = lint_file(script, Options(verl_tree=tree, gpu_gib=80), composer)  # (the model is known: a GPU, or VL330)
    assert [d.code for d in again.diagnostics] == ["VL101", "VL230"]  # +trainer.lint_marker: nothing reads it
    proc = _cli("check", str(script), "--verl-root", str(tree.root))
    assert proc.returncode == 1 and "VL101" in proc.stdout and "VL106" not in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.slow
def test_wrong_type_and_corrupt_entries_are_ignored_and_rewritten(cache_root, tmp_path, verl_trees):
    """Every entry of a filled cache replaced by a pickle of the wrong type (a list where a dict,
    a config or a frozenset is expected) or by garbage: the next run gives the same result, no
    traceback, and rewrites them."""
    import pickle

    script = tmp_path / "run.sh"
    script.write_text(SCRIPT)
    args = ("check", str(script), "--verl-root", str(verl_trees["0.9.1"].root))
    first = _cli(*args)
    indexing = f"verl-lint: indexing verl tree at {verl_trees['0.9.1'].root.resolve()} (first run for this tree)\n"
    assert first.returncode == 1 and first.stderr == indexing  # the cache is empty
    entries = sorted(cache_root.glob("*/*.pickle"))
    assert {e.parent.name for e in entries} >= {"bases", "tables", "specifiers"}
    wrong = pickle.dumps([1, 2, 3])
    for i, e in enumerate(entries):
        e.write_bytes(wrong if i % 3 else b"\x80\x05garbage")
    second = _cli(*args)
    assert (second.returncode, second.stdout, second.stderr) == (first.returncode, first.stdout, first.stderr)
    assert all(e.read_bytes() not in (wrong, b"\x80\x05garbage") for e in entries)


@pytest.mark.slow
def test_a_cache_directory_that_is_a_file(tmp_path, verl_trees):
    """VERL_LINT_CACHE_DIR naming a regular file: one warning line and the run works without the
    cache; a run that needs a download stops with one error line (exit 2)."""
    not_a_dir = tmp_path / "cache"
    not_a_dir.write_text("a file\n")
    script = tmp_path / "run.sh"
    script.write_text(SCRIPT)
    proc = _cli("check", str(script), "--verl-root", str(verl_trees["0.9.1"].root), VERL_LINT_CACHE_DIR=str(not_a_dir))
    assert proc.returncode == 1 and "VL101" in proc.stdout
    assert (
        proc.stderr.splitlines()
        == [
            f"verl-lint: warning: cannot write the cache ({not_a_dir} is not a directory); running without it",
            f"verl-lint: indexing verl tree at {verl_trees['0.9.1'].root.resolve()} (first run for this tree)",  # no cache: built again
        ]
    )
    proc = _cli("check", str(script), "--verl", "0.9.1", VERL_LINT_CACHE_DIR=str(not_a_dir))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"verl-lint: error: cannot download verl 0.9.1: no usable cache directory ({not_a_dir} is not a directory);"
        " pass --verl-root DIR with a verl checkout instead"
    ]
    assert not_a_dir.read_text() == "a file\n"
    for cmd in (("cache", "clean", "--all"), ("cache", "dir")):
        proc = _cli(*cmd, VERL_LINT_CACHE_DIR=str(not_a_dir))
        assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert not_a_dir.read_text() == "a file\n"
