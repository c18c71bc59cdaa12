"""VL232: keys verl's own code warns about as deprecated, read from each release's tree."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys

import pytest
from conftest import NEWEST, OLDER, OLDEST, across_releases, cached_release

from verl_lint.config import classes
from verl_lint.config.deprecations import in_code, in_config_comments, in_post_init
from verl_lint.launch.locate import tree_at
from verl_lint.registry import main_ppo
from verl_lint.runner import lint_file
from verl_lint.runs import Options


def found(report, code="VL232"):
    return [d for d in report.diagnostics if d.code == code]


def _evidence_line(version: str, where: str) -> str:
    """The line of the release's source a finding quotes."""
    file, _, line = where.rpartition(":")
    return (cached_release(version).root / file).read_text().splitlines()[int(line) - 1]


@pytest.mark.parametrize("version", across_releases())
def test_val_batch_size_is_deprecated_in_every_release(lint, version):
    """A root-config check (`config.data.get("val_batch_size", None) is not None` -> print): the
    file moved from ray_trainer.py (0.5.0) to utils/config.py (0.7.1, 0.9.1); the finding follows."""
    [d] = found(lint(main_ppo("trainer.total_epochs=1", "data.val_batch_size=16"), version))
    assert (d.span.line, d.span.col) == (2, 57)
    where = d.message.split("(", 1)[1].split(" prints")[0]
    assert 'config.data.get("val_batch_size", None) is not None' in _evidence_line(version, where)
    assert 'prints: "WARNING: val_batch_size is deprecated.' in d.message  # a print: always shown
    assert where.startswith("verl/trainer/ppo/ray_trainer.py:" if version == OLDEST else "verl/utils/config.py:")
    assert d.fix is None  # no one-to-one replacement
    [rel] = d.related
    assert rel.span.path.endswith(where.split(":")[0]) and rel.span.line == int(where.split(":")[1])


@pytest.mark.parametrize("version", across_releases())
def test_not_set_null_or_left_at_the_default_is_silent(lint, version):
    assert found(lint(main_ppo("data.val_batch_size=null"), version)) == []
    assert found(lint(main_ppo(), version)) == []


@pytest.mark.parametrize("version", [NEWEST, pytest.param(OLDER, marks=pytest.mark.slow)])
def test_grad_clip_maps_one_to_one_to_clip_grad(lint, version):
    """`if self.grad_clip is not None: warnings.warn(...); self.clip_grad = self.grad_clip` in
    OptimizerConfig.__post_init__ (0.6 on): the finding names clip_grad and renames safely."""
    [d] = found(lint(main_ppo("+actor_rollout_ref.actor.optim.grad_clip=0.5"), version))
    assert (d.span.line, d.span.col) == (2, 34)
    assert "verl copies the value into `actor_rollout_ref.actor.optim.clip_grad`" in d.message
    # warnings.warn(..., DeprecationWarning): Python's default filters drop it, the user sees nothing
    assert (
        'warns: "`grad_clip` is deprecated, use `clip_grad` instead.", a DeprecationWarning, which Python\'s default warning filters hide'
        in d.message
    )
    # `+` would fail for clip_grad, which the config ships: the whole token is rewritten.
    assert (d.fix.safe, d.fix.kind, d.fix.new) == (True, "replace-token", "actor_rollout_ref.actor.optim.clip_grad=0.5")
    assert found(lint(main_ppo("+actor_rollout_ref.actor.optim.grad_clip=null"), version)) == []


def test_grad_clip_with_clip_grad_set_too_has_no_fix(lint):
    [d] = found(
        lint(main_ppo("+actor_rollout_ref.actor.optim.grad_clip=0.5", "actor_rollout_ref.actor.optim.clip_grad=0.7"))
    )
    assert "overwriting the `actor_rollout_ref.actor.optim.clip_grad` you set too" in d.message
    assert d.fix is None and d.help == "keep only `actor_rollout_ref.actor.optim.clip_grad`"
    assert [r.key for r in d.related][0] == "actor_rollout_ref.actor.optim.clip_grad"


@pytest.mark.slow
def test_no_replacement_the_code_does_not_read(composer, tmp_path):
    """A tree whose workers still read the old key (a fork of 0.7.1 whose engine and workers read
    `optim.warmup_style`; only the config dataclass knows `lr_scheduler_type`): the finding stays,
    but writing the replacement would reach no code, so it is not offered."""
    fork = tmp_path / "fork"
    shutil.copytree(cached_release(OLDER).root / "verl", fork / "verl")
    for f in (fork / "verl").rglob("*.py"):
        if f.parent.name != "config" and "lr_scheduler_type" in (text := f.read_text()):
            f.write_text(text.replace("lr_scheduler_type", "warmup_style"))
    script = tmp_path / "sft.sh"
    script.write_text("#!/bin/bash\npython3 -m verl.trainer.sft_trainer optim.warmup_style=cosine\n")
    [d] = found(lint_file(script, Options(verl_tree=tree_at(fork, "checkout")), composer))
    assert (
        "verl copies the value into `optim.lr_scheduler_type`, which nothing in verl 0.7.1 reads beyond its config declaration"
        in d.message
    )
    assert (
        d.help
        == "keep `optim.warmup_style`: written as `optim.lr_scheduler_type`, the setting would reach no code of this tree"
        and d.fix is None
    )
    # the release itself reads it (its engines): the replacement is offered, with the rename
    [d] = found(lint_file(script, Options(verl_tree=cached_release(OLDER)), composer))
    assert d.help == "write `optim.lr_scheduler_type` instead" and d.fix is not None


def test_a_value_known_only_at_run_time_still_sets_the_key(lint):
    script = (
        f"#!/bin/bash\npython3 -m verl.trainer.main_ppo data.val_batch_size=$VBS {main_ppo().split('main_ppo ')[1]}"
    )
    [d] = found(lint(script))
    assert (d.span.line, d.span.col) == (2, 34)


def test_truthy_guard_fires_only_for_a_true_value(lint):
    """0.9.1 McoreEngineConfig: `if self.vanilla_mbridge: warnings.warn(...)` (no mapping)."""
    base = "#!/bin/bash\npython3 -m verl.trainer.main_ppo --config-name ppo_megatron_trainer actor_rollout_ref.rollout.name=vllm "
    [d] = found(lint(base + "actor_rollout_ref.actor.megatron.vanilla_mbridge=True\n"))
    assert (d.span.line, d.span.col) == (2, 105) and "verl/workers/config/engine.py:219" in d.message
    assert found(lint(base + "actor_rollout_ref.actor.megatron.vanilla_mbridge=False\n")) == []


@pytest.mark.parametrize("version", [NEWEST, pytest.param(OLDER, marks=pytest.mark.slow)])
def test_a_curated_record_of_the_same_override_wins(lint, version):
    """warmup_style: VL418 (0.9.1) knows every actor maps it; VL206 (0.7.1) knows the legacy actor
    ignores it. The derived fact would say "maps" in both: the curated record is kept."""
    report = lint(main_ppo("actor_rollout_ref.actor.optim.warmup_style=cosine"), version)
    assert [d.code for d in report.diagnostics] == ["VL418" if version == NEWEST else "VL206"]


def test_a_user_config_file_sets_the_key_and_an_interpolation_reads_it(lint, tmp_path):
    """A project's own config file (outside the verl tree) is the user's choice too. The ref's key
    only interpolates the actor's: one finding, for the key the file sets."""
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "mine.yaml").write_text(
        "hydra:\n  searchpath:\n    - pkg://verl.trainer.config\n"
        "defaults:\n  - ppo_megatron_trainer\n  - _self_\n"
        "actor_rollout_ref:\n  actor:\n    megatron:\n      vanilla_mbridge: True\n"
        "  ref:\n    megatron:\n      vanilla_mbridge: ${oc.select:actor_rollout_ref.actor.megatron.vanilla_mbridge,False}\n"
    )
    script = f"#!/bin/bash\npython3 -m verl.trainer.main_ppo --config-path={conf} --config-name=mine actor_rollout_ref.rollout.name=vllm\n"
    assert [d.key for d in found(lint(script))] == ["actor_rollout_ref.actor.megatron.vanilla_mbridge"]


def test_fix_through_the_cli(tmp_path, verl_trees):
    script = tmp_path / "run.sh"
    script.write_text(main_ppo("data.val_batch_size=8", "+actor_rollout_ref.actor.optim.grad_clip=0.5"))
    tree = str(verl_trees[NEWEST].root)
    r = subprocess.run(
        [sys.executable, "-m", "verl_lint.cli", "check", "--verl-root", tree, "--fix", str(script)],
        capture_output=True,
        text=True,
    )
    assert "Traceback" not in r.stderr
    text = script.read_text()
    assert "actor_rollout_ref.actor.optim.clip_grad=0.5" in text and "grad_clip" not in text
    assert "data.val_batch_size=8" in text  # no replacement to rename it to: left alone
    r = subprocess.run(
        [sys.executable, "-m", "verl_lint.cli", "check", "--verl-root", tree, str(script)],
        capture_output=True,
        text=True,
    )
    assert r.stdout.count("VL232") == 1 and "data.val_batch_size" in r.stdout


_SHAPES = """
class C:
    def __post_init__(self):
        if self.old is not None:
            warnings.warn("`old` is deprecated, use `new` instead.", DeprecationWarning)
            self.new = self.old
        if self.flag:
            logger.warning(f"`flag={self.flag}` is deprecated")
        if self.mode != "async":
            warnings.warn("mode is deprecated")
        if self.other is None:
            warnings.warn("using x is deprecated")
        if self.quiet is not None:
            warnings.warn("`quiet` is going away")
        if self.a is not None:
            helper()
        else:
            warnings.warn("`a` is deprecated")

def validate(config, self):
    if config.data.get("vbs", None) is not None:
        print("WARNING: vbs is deprecated." + " more")
    if config.data.get("x", 4) is not None:
        print("x is deprecated")
    if self.config.trainer.y:
        print("y is deprecated")
    if cfg.data.z is not None:
        print("z is deprecated")
    if self.model.config.w is not None:
        print("w is deprecated")
"""


def test_only_provable_shapes_are_read():
    tree = ast.parse(_SHAPES)
    post_init = tree.body[0].body[0]
    facts = in_post_init(post_init.body, "m.py")
    assert sorted(facts) == ["flag", "old"]
    assert (facts["old"].new, facts["old"].guard, facts["old"].where, facts["old"].how) == (
        "new",
        "not-none",
        "m.py:4",
        "DeprecationWarning",
    )
    assert (facts["flag"].new, facts["flag"].guard, facts["flag"].message, facts["flag"].how) == (
        "",
        "truthy",
        "`flag={...}` is deprecated",
        "log",
    )
    code = in_code(tree, "m.py")
    assert [(f.key, f.guard, f.message, f.how) for f in code] == [
        ("data.vbs", "not-none", "WARNING: vbs is deprecated. more", "print"),
        ("trainer.y", "truthy", "y is deprecated", "print"),
    ]


@pytest.mark.parametrize(
    "call,how",
    [
        ('warnings.warn("x is deprecated")', "UserWarning"),  # no category: a UserWarning
        ('warnings.warn("x is deprecated", FutureWarning, stacklevel=2)', "FutureWarning"),
        ('warn("x is deprecated", category=DeprecationWarning)', "DeprecationWarning"),
        ('warnings.warn("x is deprecated", MY_CATEGORY)', "MY_CATEGORY"),
        ('warnings.warn("x is deprecated", kinds[0])', ""),  # not known statically
        ('logger.warn("x is deprecated")', "log"),
        ('logging.warning("x is deprecated")', "log"),
    ],
)
def test_how_verl_says_it(call, how):
    body = ast.parse(f"def __post_init__(self):\n    if self.x is not None:\n        {call}\n").body[0].body
    assert in_post_init(body, "m.py")["x"].how == how


@pytest.mark.parametrize("version", [NEWEST, OLDER])
def test_inherited_deprecations_reach_the_subclass(version, verl_trees):
    """grad_clip lives in OptimizerConfig; FSDPOptimizerConfig and McoreOptimizerConfig inherit it."""
    root = str(verl_trees[version].root)
    for target in ("verl.workers.config.FSDPOptimizerConfig", "verl.workers.config.McoreOptimizerConfig"):
        fact = classes.find(root, target).deprecated["grad_clip"]
        assert fact.new == "clip_grad" and "if self.grad_clip is not None:" in _evidence_line(version, fact.where)


def test_a_deprecation_verl_declares_in_a_config_comment(lint):
    """rollout/rollout.yaml: `# [Will be deprecated, use log_prob_micro_batch_size_per_gpu]` above the key;
    actor/actor.yaml: `# [Deprecated] Global micro batch size`."""
    script = main_ppo(
        "actor_rollout_ref.actor.ppo_micro_batch_size=64",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8",
        "algorithm.adv_estimator=grpo",
    )
    [d] = found(lint(script, OLDEST))
    assert (d.span.line, d.span.col) == (2, 34) and "verl/trainer/config/actor/actor.yaml:14" in d.message, d.message
    assert (
        "[Deprecated] Global micro batch size" in d.message and d.fix is None
    )  # not a rename: a global size is not per GPU


def test_the_global_log_prob_size_the_engine_workers_never_read_is_an_error(lint):
    script = main_ppo(
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size=64",
        "algorithm.adv_estimator=grpo",
    )
    report = lint(script, NEWEST)
    got = [(d.code, d.span.col) for d in report.diagnostics]
    assert got == [("VL318", 89)], [(d.code, d.message) for d in report.diagnostics]  # VL232 (the comment) gives way
    # with the legacy workers (0.5.0) the global size is normalised: only deprecated
    assert [d.code for d in lint(script, OLDEST).diagnostics] == ["VL232"]


def test_a_comment_that_only_mentions_the_word_declares_nothing(verl_trees):
    facts = {(f.key, f.where.rpartition(":")[0]) for f in in_config_comments(str(verl_trees[NEWEST].root))}
    assert ("log_prob_micro_batch_size", "verl/trainer/config/rollout/rollout.yaml") in facts
    assert not any(k in ("strategy", "defaults", "use_legacy_mbridge") for k, _ in facts), (
        facts
    )  # "fsdp (deprecating)", the file's own note


def test_a_top_level_config_comment_holds_under_a_project_config_of_another_name(lint, tmp_path):
    """ppo_trainer.yaml's own comment declares a key deprecated (0.9.1): a project's my_grpo that
    composes ppo_trainer gets it too; the comments of verl's other top-level configs do not count."""
    key = "global_profiler.global_tool_config.precision_debugger.steps"
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "my_grpo.yaml").write_text(
        "hydra:\n  searchpath:\n    - pkg://verl.trainer.config\ndefaults:\n  - ppo_trainer\n  - _self_\n"
    )
    plain = main_ppo(f"{key}=[1]")
    mine = plain.replace("main_ppo ", f"main_ppo --config-path={tmp_path}/config --config-name=my_grpo ", 1)
    for script in (plain, mine):
        got = [(d.code, d.key) for d in lint(script, NEWEST).diagnostics]
        assert got == [("VL232", key)], got
        assert "ppo_trainer.yaml:446" in lint(script, NEWEST).diagnostics[0].message
