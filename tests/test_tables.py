"""The knowledge tables' records are gated on evidence in the verl tree being linted.

Trees edited here are copies of real releases made at test time (one guarded file changed), so
the same scripts fire or stay silent because of what the code says, not its version string.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import NEWEST, OLDER, across_releases, codes
from packaging.version import Version

from verl_lint.knowledge import load_table, table
from verl_lint.launch.locate import tree_at
from verl_lint.registry import parse_version
from verl_lint.rules import tables
from verl_lint.rules.tables import release_in
from verl_lint.runner import lint_file
from verl_lint.runs import Options
from verl_lint.table_records import Fact

ROOT = Path(__file__).resolve().parent.parent


def _copy(verl_trees, version: str, tmp_path: Path, name: str = "tree") -> Path:
    """A copy of a real release's `verl` package (no dist-info: the tree is read as a checkout)."""
    dest = tmp_path / name
    shutil.copytree(verl_trees[version].root / "verl", dest / "verl")
    return dest


def _edit(root: Path, rel: str, old: str, new: str) -> None:
    f = root / rel
    text = f.read_text()
    assert old in text, f"{rel} no longer contains {old!r}: update the test"
    f.write_text(text.replace(old, new))


def _lint(tmp_path: Path, composer, root: Path, *overrides: str) -> list[str]:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\npython3 -m verl.trainer.main_ppo " + " ".join(overrides) + "\n")
    report = lint_file(script, Options(verl_tree=tree_at(root, "checkout")), composer)
    assert not report.errors, report.errors
    return codes(report)


# ---------------------------------------------------------- evidence ----


@pytest.mark.slow
def test_max_model_len_overwrite_follows_the_server_code(verl_trees, composer, tmp_path):
    """VL207: silent on 0.7.1 (its server keeps a user value), fires once the `is None` guard is
    gone, although the version still says 0.7.1 (the old range <0.7.1 kept it silent)."""
    args = ("actor_rollout_ref.rollout.mode=async", "actor_rollout_ref.rollout.max_model_len=8192")
    real = verl_trees[OLDER].root
    assert "VL207" not in _lint(tmp_path, composer, real, *args)
    root = _copy(verl_trees, OLDER, tmp_path)
    _edit(
        root,
        "verl/workers/rollout/vllm_rollout/vllm_async_server.py",
        "if self.config.max_model_len is None:",
        "if True:",
    )
    assert "VL207" in _lint(tmp_path, composer, root, *args)


@pytest.mark.slow
def test_kl_in_reward_settings_follow_the_trainer_guard(verl_trees, composer, tmp_path):
    """VL233 fires on 0.9.1, whose trainers build the KL controller only under the switch; a tree
    whose legacy trainer no longer has that guard gets no finding."""
    assert "VL233" in _lint(tmp_path, composer, verl_trees[NEWEST].root, "algorithm.kl_ctrl.kl_coef=0.01")
    root = _copy(verl_trees, NEWEST, tmp_path)
    _edit(
        root,
        "verl/trainer/ppo/ray_trainer.py",
        "if self.config.algorithm.use_kl_in_reward",
        "if True or self.config.algorithm.use_kl_in_reward",
    )
    assert "VL233" not in _lint(tmp_path, composer, root, "algorithm.kl_ctrl.kl_coef=0.01")


@pytest.mark.slow
def test_freeze_vision_tower_follows_its_readers(verl_trees, composer, tmp_path):
    """VL214 fires on 0.9.1 (only the dataclass mentions the key); silent when the engine worker reads it."""
    arg = "actor_rollout_ref.actor.freeze_vision_tower=True"
    assert "VL214" in _lint(tmp_path, composer, verl_trees[NEWEST].root, arg)
    root = _copy(verl_trees, NEWEST, tmp_path)
    worker = root / "verl/workers/engine_workers.py"
    worker.write_text(worker.read_text() + "\n\ndef _freeze(config):\n    return config.actor.freeze_vision_tower\n")
    assert "VL214" not in _lint(tmp_path, composer, root, arg)


@pytest.mark.slow
def test_dead_key_read_by_a_recipe_of_the_tree_is_not_dead(verl_trees, composer, tmp_path):
    """VL215 judges each key by its own readers: a recipe in the checkout that reads
    num_repeat_rollouts (as verl 0.7.0's collabllm does) keeps that key quiet, not the others."""
    root = _copy(verl_trees, NEWEST, tmp_path)
    (root / "recipe/repeat").mkdir(parents=True)
    (root / "recipe/repeat/loop.py").write_text(
        "def repeats(config):\n    return config.actor_rollout_ref.rollout.multi_turn.num_repeat_rollouts\n"
    )
    got = _lint(
        tmp_path,
        composer,
        root,
        "actor_rollout_ref.rollout.multi_turn.num_repeat_rollouts=3",
        "actor_rollout_ref.rollout.over_sample_rate=0.1",
    )
    assert got.count("VL215") == 1
    assert "VL215" in _lint(
        tmp_path, composer, verl_trees[NEWEST].root, "actor_rollout_ref.rollout.multi_turn.num_repeat_rollouts=3"
    )


def test_removed_entry_point_needs_its_replacement_in_the_tree(verl_trees, composer, tmp_path):
    """VL426 explains a missing fsdp_sft_trainer only where the tree has sft_trainer instead."""
    root = _copy(verl_trees, OLDER, tmp_path)
    script = tmp_path / "sft.sh"
    script.write_text("#!/bin/bash\npython3 -m verl.trainer.fsdp_sft_trainer trainer.total_epochs=1\n")
    assert codes(lint_file(script, Options(verl_tree=tree_at(root, "checkout")), composer)) == ["VL426"]
    other = _copy(verl_trees, OLDER, tmp_path, "without-sft-trainer")  # (facts are memoised per tree)
    (other / "verl/trainer/sft_trainer.py").unlink()
    assert "VL426" not in codes(lint_file(script, Options(verl_tree=tree_at(other, "checkout")), composer))


# ------------------------------------------------------ silent values ----


@pytest.mark.parametrize("value", ["0", "0.0", "0.000"])
def test_zero_kl_coef_with_the_kl_off_is_not_a_finding(lint, value):
    """`kl_coef=0` while use_kl_in_reward is off agrees with what happens: how users say "off"."""
    assert "VL233" not in codes(lint(f"python3 -m verl.trainer.main_ppo algorithm.kl_ctrl.kl_coef={value}\n"))
    assert "VL233" not in codes(
        lint(f"python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.kl_loss_coef={value}\n")
    )


def test_nonzero_kl_coef_with_the_kl_off_still_fires(lint):
    assert "VL233" in codes(lint("python3 -m verl.trainer.main_ppo algorithm.kl_ctrl.kl_coef=0.001\n"))


def test_disabled_value_of_a_dead_key_is_silent(lint):
    """`freeze_vision_tower=False` is what the engine workers do anyway."""
    assert "VL214" not in codes(
        lint("python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.freeze_vision_tower=False\n")
    )


def test_a_value_known_only_at_run_time_may_agree(lint):
    """`skip.rollout.enable=$S` may be False, what happens anyway: silent; a known True fires."""
    assert "VL221" not in codes(lint('python3 -m verl.trainer.main_ppo skip.rollout.enable="$S"\n'))
    assert "VL221" in codes(lint("python3 -m verl.trainer.main_ppo skip.rollout.enable=True\n"))


def test_a_condition_left_to_the_caller_is_judged_as_written_and_named(lint):
    """VL221 needs trainer.use_v1=True, verl 0.9.1's default: a launch passing "$@" runs with it
    unless its caller says otherwise, and the finding says so; a condition the script sets
    itself is the script's."""
    [d] = [
        d
        for d in lint('python3 -m verl.trainer.main_ppo skip.rollout.enable=True "$@"\n').diagnostics
        if d.code == "VL221"
    ]
    assert d.message.endswith(' under skip.rollout_tq (unless the caller\'s "$@" sets `trainer.use_v1`).'), d.message
    own = lint('python3 -m verl.trainer.main_ppo trainer.use_v1=True skip.rollout.enable=True "$@"\n')
    assert [d.message.endswith("skip.rollout_tq.") for d in own.diagnostics if d.code == "VL221"] == [True]
    assert "VL221" not in codes(
        lint('python3 -m verl.trainer.main_ppo trainer.use_v1=False skip.rollout.enable=True "$@"\n')
    )


# ------------------------------------------- no source: version range ----


def _configs_only(verl_trees, tmp_path: Path, version_text: str) -> Path:
    """A 0.7.1 tree without its workers' code (configs and entry point only), with `version_text`."""
    root = _copy(verl_trees, OLDER, tmp_path, f"tree-{version_text}")
    shutil.rmtree(root / "verl/workers")
    (root / "verl/version/version").write_text(version_text + "\n")
    assert not tables.has_source(root.resolve())
    return root


@pytest.mark.slow
def test_without_source_a_dev_version_counts_as_its_release(verl_trees, composer, tmp_path):
    """0.7.0.dev is the 0.7.0 code: VL215 (>=0.7.0) applies, which PEP 440 order (dev < release) denied."""
    root = _configs_only(verl_trees, tmp_path, "0.7.0.dev")
    assert "VL215" in _lint(tmp_path, composer, root, "actor_rollout_ref.rollout.over_sample_rate=0.1")


@pytest.mark.slow
def test_without_source_an_rc_counts_as_its_release(verl_trees, composer, tmp_path):
    """0.7.1rc1 is not before 0.7.1: VL207 (<0.7.1) does not apply."""
    root = _configs_only(verl_trees, tmp_path, "0.7.1rc1")
    args = ("actor_rollout_ref.rollout.mode=async", "actor_rollout_ref.rollout.max_model_len=8192")
    assert "VL207" not in _lint(tmp_path, composer, root, *args)


@pytest.mark.parametrize(
    "spec,version,inside",
    [
        (">=0.7.0", "0.7.0.dev0", True),
        (">=0.7.0", "0.7.0rc2", True),
        (">=0.6.0,<0.7.1", "0.7.1.dev3", False),
        (">=0.7.0", "0.7.0+local", True),
        (">=0.7.0", "0.6.1.post1", False),
    ],
)
def test_release_in(spec, version, inside):
    assert tables.release_in(spec, parse_version(version)) is inside


# ------------------------------------------------------ table schema ----


def test_field_fact_reads_the_class_body(verl_trees):
    root = verl_trees[NEWEST].root
    assert tables.holds(Fact("field", "verl.workers.config.actor.FSDPActorConfig.grad_clip"), root)
    assert not tables.holds(Fact("field", "verl.workers.config.actor.ActorConfig.grad_clip"), root)


def _broken_package(tmp_path: Path, table: str, old: str, new: str) -> tuple[dict, str]:
    """The environment of a run whose knowledge package is a copy of the tables with `old`
    replaced by `new` in `table` (first on sys.path, as an installed package would be), and the
    edited table's text."""
    pkg = tmp_path / "verl_lint_knowledge"
    shutil.copytree(ROOT / "rules", pkg)
    text = (pkg / table).read_text()
    assert old in text, f"{table} no longer contains {old!r}: update the test"
    text = text.replace(old, new, 1)
    (pkg / table).write_text(text)
    return dict(os.environ, PYTHONPATH=str(tmp_path), VERL_LINT_CACHE_DIR=str(tmp_path / "cache")), text


@pytest.mark.slow
@pytest.mark.parametrize(
    "table,old,new,at,problem",
    [
        # the brief's example: a misspelt field of a rule record
        (
            "ineffective_keys.yaml",
            "  keys: [actor_rollout_ref.actor.optim.clip_grad",
            "  kyes: [actor_rollout_ref.actor.optim.clip_grad",
            "kyes",
            'unknown field "kyes" in record VL205',
        ),
        (
            "ineffective_keys.yaml",
            "    - {not_read: grad_clip}\n",
            "    - {not_reed: grad_clip}\n",
            "not_reed",
            'field "requires" in record VL204: unknown fact',
        ),
        # a table only other modules read (as a dict), found before any lint starts
        (
            "env_vars.yaml",
            '    until: "0.11.1"\n    verl: ">=0.6.0"',
            '    until: "0.11.1"\n    verl: ">=0.6.0"\n    versions: "0.12"',
            "versions:",
            'unknown field "versions" in record VLLM_USE_V1',
        ),
    ],
)
def test_a_bad_table_stops_every_command_with_one_line(tmp_path, table, old, new, at, problem):
    """`verl-lint: error: rules/<table>:<line>: <problem>`, exit 2, for the listing and for a
    lint; <line> is the line of the offending field (`at`, its first occurrence)."""
    env, text = _broken_package(tmp_path, table, old, new)
    line = text.split(at, 1)[0].count("\n") + 1
    for args in (
        ["rules"],
        ["check", "--", "python3", "-m", "verl.trainer.main_ppo", "actor_rollout_ref.rollout.name=vllm"],
    ):
        r = subprocess.run(
            [sys.executable, "-m", "verl_lint.cli", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=300,
        )
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-1500:]
        assert r.stderr.startswith(f"verl-lint: error: rules/{table}:{line}: {problem}"), (line, r.stderr)
        assert r.stderr.count("\n") == 1


def _refresh():
    spec = importlib.util.spec_from_file_location(
        "refresh_knowledge", Path(__file__).resolve().parent.parent / "scripts" / "refresh_knowledge.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# 0.6.1 as well: the only release of several records (VL223, VL224), whose `when:` names a
# mandatory `???` key (rollout.name) that the default config has without a value.
@pytest.mark.parametrize(
    "version", [*across_releases(), pytest.param("0.6.1", marks=[pytest.mark.slow, pytest.mark.network])]
)
def test_each_fallback_range_agrees_with_its_facts(verl_trees, version):
    """A record's `verl:`/`removed:` fallback decides only for a tree without source: it must say
    what the record's facts say in the real release (scripts/refresh_knowledge.py rewrites it).
    The newest release is the one the tables are verified through."""
    refresh = _refresh()
    root = verl_trees[version].root
    has_key = refresh.default_config_keys(root)
    if version == NEWEST:
        assert {table(n).verified_through["verl"] for n in refresh.TABLES} == {NEWEST}
    wrong = []
    for name in refresh.TABLES:
        for rec in load_table(name):
            holds = refresh._holds(rec, root, has_key)
            if holds is not None and holds != release_in(rec.fallback, Version(version)):
                wrong.append(f"{rec.code}: facts {'hold' if holds else 'do not hold'}, fallback {rec.fallback!r}")
    assert not wrong


@pytest.mark.network
def test_the_index_lists_verl_releases_oldest_first():
    """What refresh_knowledge.py walks: final releases with a wheel (no rc, no dev)."""
    from verl_lint.download import releases

    found = releases("verl")
    assert found == sorted(found) and {Version("0.7.1"), Version("0.9.1")} <= set(found)
    assert not any(v.is_prerelease or v.is_devrelease for v in found)
