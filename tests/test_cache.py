"""The on-disk cache of composed bases: warm runs hit it with identical results; `cache clean`; `--no-cache`."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from verl_lint import cache
from verl_lint.compose import Composer
from verl_lint.launch import launches
from verl_lint.cache import cache_dir
from verl_lint.locate import locate_app
from verl_lint.shell import evaluate

SCRIPT = (
    "MODEL=${MODEL:-/models/Qwen2.5-7B}\n"
    "python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo actor_rollout_ref.model.path=$MODEL \\\n"
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


def test_clean_all_removes_releases_and_only_what_verl_lint_wrote(cache_root):
    bases = cache_root / "bases"
    bases.mkdir(parents=True)
    (bases / ("a" * 32 + ".pickle")).write_bytes(b"x" * 100)
    (bases / ("b" * 32 + ".4242.tmp")).write_bytes(b"x" * 10)
    (bases / "notes.txt").write_text("not ours\n")  # e.g. VERL_LINT_CACHE_DIR pointed at a used directory
    rel = cache_root / "releases" / "verl-0.9.1" / "verl"
    rel.mkdir(parents=True)
    (rel / "version").write_text("0.9.1\n")
    (cache_root / "releases" / "keep-me").mkdir()

    assert cache.usage()["bases"] == (3, 100 + 10 + len("not ours\n"))
    assert cache.clean() == (2, 110)
    assert (bases / "notes.txt").is_file()
    assert (cache_root / "releases" / "verl-0.9.1").is_dir()
    assert cache.clean(releases=True) == (1, len("0.9.1\n"))
    assert not (cache_root / "releases" / "verl-0.9.1").exists()
    assert (cache_root / "releases" / "keep-me").is_dir()
    assert cache.clean(releases=True) == (0, 0)  # idempotent


def test_clean_on_a_missing_cache_dir(cache_root):
    assert not cache_root.exists()
    assert cache.clean(releases=True) == (0, 0)


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


def test_corrupt_cache_entry_is_a_miss(cache_root, tmp_path, verl_trees):
    la, app = _launch(tmp_path, verl_trees)
    expected = _result(Composer().compose(app, la.overrides, la.entry_span))
    [stored] = (cache_root / "bases").glob("*.pickle")
    stored.write_bytes(stored.read_bytes()[:100])  # truncated
    c = Composer()
    assert _result(c.compose(app, la.overrides, la.entry_span)) == expected
    assert c.stats["base_misses"] == 1


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
    assert cache.run(parser.parse_args(["clean"])) == 0
    assert "removed 1 file" in capsys.readouterr().out
    assert not (cache_root / "bases").exists()
    if "cache" in cli._parser()._subparsers._group_actions[0].choices:
        cli.main(["check", str(p), "--verl-root", root])
        assert cli.main(["cache", "clean", "--all"]) == 0
        assert "removed 1 file" in capsys.readouterr().out
        assert not (cache_root / "bases").exists()
