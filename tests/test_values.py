"""Values verl rejects only when a worker builds its config: read from the tree being linted."""

from __future__ import annotations

import ast

import pytest
from conftest import NEWEST, OLDER, OLDEST, across_releases, codes

from verl_lint.config import classes
from verl_lint.registry import main_ppo


def found(report, code):
    return [(d.span.line, d.span.col, d.message, d.help) for d in report.diagnostics if d.code == code]


def test_allowed_values_come_from_the_tree_of_each_release(lint):
    """`token-sum` joined the loss aggregation modes in 0.8: accepted by 0.9.1, rejected by 0.7.1."""
    script = main_ppo("actor_rollout_ref.actor.loss_agg_mode=token-sum")
    assert found(lint(script, NEWEST), "VL108") == []
    [(line, col, msg, help)] = found(lint(script, OLDER), "VL108")
    assert (line, col) == (2, 34)
    assert "verl/workers/config/actor.py:209 raises ValueError" in msg
    assert help == "use one of: token-mean, seq-mean-token-sum, seq-mean-token-mean, seq-mean-token-sum-norm"


@pytest.mark.parametrize("version", across_releases())
def test_a_boolean_for_a_choice_and_a_guarded_none(lint, version):
    script = main_ppo("actor_rollout_ref.actor.loss_agg_mode=True", "actor_rollout_ref.actor.optim.warmup_style=null")
    [(line, col, msg, _)] = found(lint(script, version), "VL108")
    assert (line, col) == (2, 34) and "`actor_rollout_ref.actor.loss_agg_mode=True`" in msg
    # warmup_style is checked only when it is not None (`if self.warmup_style is not None:`).


@pytest.mark.parametrize("version", across_releases())
def test_verl_defaults_and_unknown_values_are_not_judged(lint, version):
    assert found(lint(main_ppo(), version), "VL108") == []
    unknown = "#!/bin/bash\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm actor_rollout_ref.actor.loss_agg_mode=$MODE\n"
    assert found(lint(unknown, version), "VL108") == []


@pytest.mark.parametrize("version", across_releases(fails_on_oldest="verl 0.5.0 has no HFModelConfig (issue #19)"))
def test_added_key_not_a_field_of_a_converted_section(lint, version):
    script = main_ppo("+actor_rollout_ref.model.enable_activation_offloading=True")
    [(line, col, msg, help)] = found(lint(script, version), "VL110")
    assert (line, col) == (2, 34) and "HFModelConfig" in msg
    assert help == "did you mean `actor_rollout_ref.model.enable_activation_offload`?"


@pytest.mark.parametrize("version", across_releases())
def test_added_key_under_a_section_no_code_converts_is_not_judged(lint, version):
    # `algorithm` has a `_target_`, but neither release converts it: the trainer reads its
    # keys one by one from the DictConfig, so an extra key is harmless.
    assert found(lint(main_ppo("+algorithm.my_extra_coef=0.5"), version), "VL110") == []
    # Free-form dicts (engine_kwargs) are not dataclass fields' parents.
    assert found(lint(main_ppo("+actor_rollout_ref.rollout.engine_kwargs.vllm.max_num_seqs=8"), version), "VL110") == []


@pytest.mark.parametrize("version", across_releases())
def test_a_launch_that_only_prints_its_config_is_judged_on_composition_only(lint, version):
    """`--cfg job` (verl's own scripts/generate_trainer_config.sh does this): Hydra composes the
    config, prints it and exits; no worker builds a config, but a bad key still fails."""
    rejected = "actor_rollout_ref.rollout.name=vllm actor_rollout_ref.actor.loss_agg_mode=True trainer.nnodez=1"
    assert sorted(codes(lint(f"#!/bin/bash\npython3 -m verl.trainer.main_ppo {rejected}\n", version))) == [
        "VL101",
        "VL108",
    ]
    assert codes(lint(f"#!/bin/bash\npython3 -m verl.trainer.main_ppo --cfg job {rejected}\n", version)) == ["VL101"]


def test_a_choice_checked_by_the_trainer_code_is_judged_too(lint):
    """0.5.0 has no actor dataclass; `RayPPOTrainer._validate_config` asserts the value at the top
    of its body (ray_trainer.py:510). 0.9.1's dataclass check is the one quoted there."""
    script = main_ppo("actor_rollout_ref.actor.loss_agg_mode=seq-mean")
    [(line, col, msg, help)] = found(lint(script, OLDEST), "VL108")
    assert (line, col) == (2, 34)
    assert "verl/trainer/ppo/ray_trainer.py:510 raises AssertionError" in msg
    assert help == "use one of: token-mean, seq-mean-token-sum, seq-mean-token-mean, seq-mean-token-sum-norm"
    [(_, _, msg, _)] = found(lint(script, NEWEST), "VL108")
    assert "FSDPActorConfig" in msg and "ray_trainer" not in msg
    assert found(lint(main_ppo("actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-sum"), OLDEST), "VL108") == []


_CODE = """
MODES = ["a", "b"]

def validate(config, self):
    assert config.algo.mode in MODES
    if self.config.algo.kind not in ("x", "y"):
        raise ValueError("bad kind")
    if config.algo.use_it:
        assert config.algo.nested in ["n"]
    assert config.algo.enum in [Estimator.GRPO]
    assert self.model.config.arch in ["q"]
    assert config.algo.get("got", "a") in ["a"]
    if config.algo.engine in {"fsdp", "fsdp2"}:
        pass
    elif config.algo.engine == "megatron":
        pass
    else:
        raise NotImplementedError
    if self.config.rollout.name == "vllm":  # a worker's own section, not the root config
        pass
    else:
        raise NotImplementedError
    if config.algo.resume == "disable":
        return
    assert config.algo.after_return in ["r"]  # only reached when the `if` above did not return
"""


def test_code_choices_only_unconditional_literal_checks_on_root_keys():
    got = classes.code_choices(ast.parse(_CODE), "m.py")
    assert [(k, c.values, c.raises, c.where) for k, c in got] == [
        ("algo.mode", ("a", "b"), "AssertionError", "m.py:5"),
        ("algo.kind", ("x", "y"), "ValueError", "m.py:6"),
        ("algo.engine", ("fsdp", "fsdp2", "megatron"), "NotImplementedError", "m.py:13"),
    ]


@pytest.mark.slow
def test_an_entry_point_routing_a_value_to_not_implemented_is_judged(lint):
    """0.5.0's main_ppo picks the actor's workers with `if strategy in {"fsdp", "fsdp2"}: ...
    elif strategy == "megatron": ... else: raise NotImplementedError`; 0.9.1 has no such chain."""
    script = main_ppo("actor_rollout_ref.actor.strategy=fsdp3")
    [(line, col, msg, help)] = found(lint(script, OLDEST), "VL108")
    assert (line, col) == (2, 34) and "verl/trainer/main_ppo.py:127 raises NotImplementedError" in msg
    assert help == "use one of: fsdp, fsdp2, megatron"
    assert found(lint(main_ppo("actor_rollout_ref.actor.strategy=fsdp2"), OLDEST), "VL108") == []
    assert found(lint(script, NEWEST), "VL108") == []


def test_a_literal_annotation_is_no_check(verl_trees):
    """OmegaConf cannot build a dataclass with a `Literal` field, so verl instantiates those classes
    with Hydra, which ignores annotations: `reshard_after_forward: Literal[...]` checks nothing."""
    cls = classes.find(str(verl_trees[NEWEST].root), "verl.workers.config.TorchtitanEngineConfig")
    assert cls.fields["reshard_after_forward"].startswith("Literal[") and "reshard_after_forward" not in cls.choices


@pytest.mark.parametrize("version", [NEWEST, pytest.param(OLDER, marks=pytest.mark.slow)])
def test_a_mandatory_value_of_a_built_section_left_unset(lint, version):
    """`name: ???` in the rollout node (0.7+): unset, the worker's instantiate raises. The reward
    model's rollout has one too, but under the reward model's `enable` switch: not judged (0.7
    builds it only with `reward_model.use_reward_loop` too: verl's own rm_legacy examples)."""
    launch = "#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.total_epochs=1 {}\n"
    [(line, col, msg, help)] = found(lint(launch.format(""), version), "VL109")
    assert (
        (line, col) == (2, 12)
        and "`actor_rollout_ref.rollout.name`" in msg
        and "RolloutConfig (verl/workers/config/rollout.py:" in msg
    )
    assert help == "set `actor_rollout_ref.rollout.name=...` on the launch"
    assert (
        found(
            lint(launch.format("actor_rollout_ref.rollout.name=vllm reward.reward_model.enable=True"), version), "VL109"
        )
        == []
    )
    # Set from a value only known at run time, or under a switch only known then: not judged.
    assert (
        found(
            lint(launch.format("actor_rollout_ref.rollout.name=$ENGINE reward.reward_model.enable=$RM"), version),
            "VL109",
        )
        == []
    )
    assert (
        found(
            lint(launch.format("actor_rollout_ref.rollout.name=sglang reward.reward_model.enable=False"), version),
            "VL109",
        )
        == []
    )
    assert found(lint(launch.format('"$@"'), version), "VL109") == []  # the caller's arguments may set it


def test_a_mandatory_value_cut_off_from_the_launch(lint):
    """The key is set, but below where a broken `\\` continuation cuts the launch short (VL008):
    the finding says it never reaches the launch, and after `\\ ` that Hydra stops earlier, on
    the ` ` bash passes; the help repairs the cut."""
    comment = "#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.total_epochs=1 \\\n# the engine\n    actor_rollout_ref.rollout.name=vllm\n"
    report = lint(comment)
    [(line, col, msg, help)] = found(report, "VL109")
    assert (line, col) == (2, 12) and msg.endswith(
        "(`actor_rollout_ref.rollout.name` is set at line 4, among the overrides cut off from the launch: they never reach it, VL008)"
    )
    assert (
        help
        == "repair the `\\` continuation that cuts the launch short above line 4 (VL008): `actor_rollout_ref.rollout.name` at line 4 then reaches it"
    )
    assert [(d.span.line, d.span.col) for d in report.diagnostics if d.code == "VL008"] == [(4, 5)]
    blank = "#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.total_epochs=1 \\  # one epoch\n    actor_rollout_ref.rollout.name=vllm\n"
    [(line, col, msg, help)] = found(lint(blank), "VL109")
    assert msg.endswith(
        "(but the run never gets that far: the `\\ ` at line 2 passes ` ` to the launch as an override, and Hydra stops on it before composing the config: VL008)"
    )
    assert "line 3 then reaches it" in help
    assert found(lint(comment.replace("# the engine\n", "")), "VL109") == []  # joined again: the launch sets it


@pytest.mark.slow
def test_no_mandatory_value_before_verl_0_7(lint):
    """verl 0.5.0 defaulted the rollout to vLLM: a launch without the name is fine there."""
    assert found(lint("#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.total_epochs=1\n", OLDEST), "VL109") == []


@pytest.mark.parametrize("version", across_releases())
def test_a_rollout_engine_the_tree_does_not_register(lint, version):
    """`name=hf` (the HF rollout left the registry in 0.6): the worker's get_rollout_class asserts.
    Judged from the tree's own `_ROLLOUT_REGISTRY`; 0.5.0 has none, and says nothing."""
    found_hf = found(lint(main_ppo("actor_rollout_ref.rollout.name=hf"), version), "VL111")
    if version == OLDEST:
        assert found_hf == []
        return
    [(line, col, message, help)] = found_hf
    assert (line, col) == (2, 34) and "AssertionError: Rollout hf with mode async not found" in message
    assert help.startswith("use one of: ") and "sglang, " in help and "vllm" in help
    unknown = "#!/bin/bash\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=$ENGINE\n"
    assert found(lint(unknown, version), "VL111") == []


def test_a_registry_other_code_extends_is_not_judged(verl_trees, tmp_path):
    """Code in verl/ that adds to the registry: the names are not all known, no verdict."""
    from verl_lint.rules.rejected_values import rollout_names

    release = verl_trees[NEWEST].root
    plain, extended = tmp_path / "plain", tmp_path / "extended"
    for root in (plain, extended):
        (root / "verl/workers/rollout").mkdir(parents=True)
        (root / "verl/workers/rollout/base.py").write_text((release / "verl/workers/rollout/base.py").read_text())
    (extended / "verl/my_engine.py").write_text(
        'from verl.workers.rollout.base import _ROLLOUT_REGISTRY\n_ROLLOUT_REGISTRY[("mine", "async")] = "x.Y"\n'
    )
    assert rollout_names(str(plain)) == rollout_names(str(release)) and "vllm" in rollout_names(str(plain))
    assert rollout_names(str(extended)) is None


@pytest.mark.parametrize("version", [NEWEST, pytest.param(OLDER, marks=pytest.mark.slow)])
def test_the_did_you_mean_of_a_renamed_key_is_the_key_verl_renamed_it_to(lint, version):
    """`multi_turn.max_turns` became `max_assistant_turns` (VL420's record): added with `+`, Hydra
    takes it and RolloutConfig rejects it, and the hint is the rename, not `max_user_turns`, the
    name closest in spelling; a key no record renamed keeps the closest field."""
    script = main_ppo(
        "+actor_rollout_ref.rollout.multi_turn.max_turns=3", "+actor_rollout_ref.rollout.tensor_parallel_size=2"
    )
    helps = [help for *_, help in found(lint(script, version), "VL110")]
    assert helps == [
        "did you mean `actor_rollout_ref.rollout.multi_turn.max_assistant_turns`?",
        "did you mean `actor_rollout_ref.rollout.tensor_model_parallel_size`?",
    ], helps


@pytest.mark.slow
def test_the_did_you_mean_of_a_renamed_key_where_nothing_reads_it(lint):
    """verl 0.5.0 builds no RolloutConfig: the added key is one nothing reads (VL230), with the same hint."""
    r = lint(main_ppo("+actor_rollout_ref.rollout.multi_turn.max_turns=3"), OLDEST)
    assert [help for *_, help in found(r, "VL230")] == [
        "did you mean `actor_rollout_ref.rollout.multi_turn.max_assistant_turns`?"
    ]


def test_a_misspelt_key_a_project_file_adds_is_reported_in_the_file_and_in_the_script(project):
    """The script's plain override of the key the file added composes (the file made the key),
    and is as foreign to RolloutConfig; the did-you-mean is the key with a word left out, not the
    MoE size that is textually closer."""
    report = project(
        "actor_rollout_ref:\n  rollout:\n    name: vllm\n    tensor_parallel_size: 2\n",
        "actor_rollout_ref.rollout.tensor_parallel_size=4",
    )
    got = [(d.span.path, d.span.line, d.span.col, d.help) for d in report.diagnostics if d.code == "VL110"]
    hint = "did you mean `actor_rollout_ref.rollout.tensor_model_parallel_size`?"
    assert got == [("config/my_grpo.yaml", 10, 5, hint), ("run.sh", 2, 84, hint)], report.diagnostics
