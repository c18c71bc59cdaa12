"""3xx size rules against real verl releases: each runs only where the release's source has the
check it mirrors, scales by the parallel dimensions that release uses, and never lets a default
stand in for a value the script leaves unknown."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import json_findings
from test_shell import local_imports

from verl_lint.launch.locate import tree_at
from verl_lint.model import Severity
from verl_lint.registry import REGISTRY, main_ppo
from verl_lint.rules import pack  # noqa: F401 - registers the rule pack
from verl_lint.runner import lint_file
from verl_lint.runs import Options

A = "actor_rollout_ref.actor"
R = "actor_rollout_ref.rollout"
OLD = "0.2.0.post2"  # the last release before verl checked mini vs train batch (0.1-0.2 semantics)
OLDER_RELEASES = ("0.1", OLD, "0.3.0.post1")  # what the forks of early verl (TinyZero, Logic-RL, ...) run


@pytest.fixture(scope="module")
def trees(verl_trees):
    return {v: verl_trees[v] for v in (OLD, "0.4.1", "0.7.1", "0.9.1")}


@pytest.fixture(scope="module")
def all_trees(verl_trees):
    """Also the oldest releases: only the tests marked slow use this (a fast run skips them when
    a release is not in the cache)."""
    return {v: verl_trees[v] for v in (*OLDER_RELEASES, "0.4.1", "0.7.1", "0.9.1")}


@pytest.fixture
def findings(trees, composer, tmp_path):
    """findings(script, version_or_tree) -> [(code, message)] of a real lint of the script."""

    def run(text: str, where) -> list[tuple[str, str]]:
        path = tmp_path / "run.sh"
        path.write_text(text)
        tree = trees[where] if isinstance(where, str) else where
        # VL607 depends on the vLLM release too: one where sleep mode and expandable segments clash.
        report = lint_file(path, Options(verl_tree=tree, versions={"vllm": "0.12.0"}), composer)
        assert not report.errors, report.errors
        return [(d.code, d.message) for d in report.diagnostics]

    return run


def only(found, code: str) -> list[str]:
    return [m for c, m in found if c == code]


@pytest.mark.slow
def test_vl302_only_where_the_tree_checks_it(findings):
    script = main_ppo("data.train_batch_size=16", f"{A}.ppo_mini_batch_size=256")
    assert only(findings(script, "0.9.1"), "VL302")  # ActorConfig.validate raises
    assert only(findings(script, "0.4.1"), "VL302")  # ray_trainer._validate_config asserts
    # verl 0.2 (and 0.1, as vendored by TinyZero / Logic-RL) splits the batch without checking.
    assert only(findings(script, OLD), "VL302") == []


@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.7.1", "0.9.1"])
def test_an_entry_point_that_does_not_validate_gets_no_validation_finding(findings, version):
    """main_generation_server shares ppo_trainer's config but never runs verl's config
    validation: the batch it would reject is no finding there."""
    sizes = ("data.train_batch_size=64", f"{A}.ppo_mini_batch_size=128")
    assert only(findings(main_ppo(*sizes), version), "VL302")
    assert only(findings(main_ppo(*sizes, module="verl.trainer.main_generation_server"), version), "VL302") == []


RECIPE_MAIN = """import hydra

from .trainer import MyRayPPOTrainer{imports}


@hydra.main(config_path="config", config_name="my_trainer", version_base=None)
def main(config):
{body}    MyRayPPOTrainer(config).fit()
"""


@pytest.mark.slow
@pytest.mark.parametrize("version, validates", [("0.7.1", False), ("0.7.1", True), ("0.4.1", False)])
def test_a_recipe_is_judged_by_whether_its_main_validates(findings, verl_trees, tmp_path, version, validates):
    """A recipe of verl's own with its own config name gets the size checks of verl's validation
    when its main runs it: it calls validate_config (0.6+), or builds a RayPPOTrainer whose
    __init__ validates (0.3-0.5). The VLA recipe of 0.7 builds a RayPPOTrainer subclass and never
    validates: no finding there."""
    root = tmp_path / "verl-tree"
    (root / "recipe" / "mine" / "config").mkdir(parents=True)
    (root / "verl").symlink_to(verl_trees[version].root / "verl", target_is_directory=True)
    call = "    validate_config(config)\n" if validates else ""
    imports = "\nfrom verl.utils.config import validate_config" if validates else ""
    (root / "recipe" / "mine" / "main.py").write_text(RECIPE_MAIN.format(imports=imports, body=call))
    (root / "recipe" / "mine" / "config" / "my_trainer.yaml").write_text(
        "hydra:\n  searchpath:\n    - pkg://verl.trainer.config\ndefaults:\n  - ppo_trainer\n  - _self_\n"
    )
    script = main_ppo("data.train_batch_size=16", f"{A}.ppo_mini_batch_size=128", module="recipe.mine.main")
    found = only(findings(script, tree_at(root, "test")), "VL302")
    assert bool(found) == (validates or version == "0.4.1"), found


@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.4.1", "0.7.1", "0.9.1"])
def test_the_critics_batches_are_checked_when_the_launch_trains_one(findings, version):
    """The critic runs with a GAE estimator (and, from 0.6, whenever `critic.enable` says so):
    then its mini batch is checked against the train batch, and its micro batch pair too."""
    sizes = ("data.train_batch_size=64", f"{A}.ppo_mini_batch_size=32", "critic.ppo_mini_batch_size=128")
    [message] = only(findings(main_ppo("algorithm.adv_estimator=gae", *sizes), version), "VL302")
    assert message.startswith("data.train_batch_size=64 is smaller than critic.ppo_mini_batch_size=128")
    assert only(findings(main_ppo("algorithm.adv_estimator=grpo", *sizes), version), "VL302") == []
    assert only(findings(main_ppo("algorithm.adv_estimator=$ADV", *sizes), version), "VL302") == []  # unknown: silent
    # Left to follow the actor's, the critic's mini batch is the actor's one mistake: one finding.
    follows = main_ppo("algorithm.adv_estimator=gae", "data.train_batch_size=64", f"{A}.ppo_mini_batch_size=128")
    assert [m.split(" is smaller than ")[1].split("=")[0] for m in only(findings(follows, version), "VL302")] == [
        f"{A}.ppo_mini_batch_size"
    ]
    # The deprecated global micro batch alone: from 0.5 verl's critic config makes `_per_gpu`
    # follow it (`${oc.select:.ppo_micro_batch_size,null}`), so both are set; 0.4 keeps them apart.
    # The FSDP critic (legacy 0.4-0.7, engine 0.9) splits its own mini batch over the GPUs / its SP, then into micro batches.
    split = (
        "data.train_batch_size=96",
        f"{A}.ppo_mini_batch_size=16",
        "critic.ppo_mini_batch_size=16",
        "critic.ppo_micro_batch_size_per_gpu=4",
    )
    dp = only(findings(main_ppo("algorithm.adv_estimator=gae", *split), version), "VL304")
    assert [m.split(" gives each rank ")[1][:2] for m in dp] == [
        "2,"
    ]  # 0.9.1: the engine critic splits it the same way (oracle tier)
    assert (
        only(
            findings(
                main_ppo("algorithm.adv_estimator=gae", *split, "critic.ulysses_sequence_parallel_size=4"), version
            ),
            "VL304",
        )
        == []
    )
    assert only(findings(main_ppo("algorithm.adv_estimator=grpo", *split), version), "VL304") == []  # no critic
    twice = only(findings(main_ppo("algorithm.adv_estimator=gae", "critic.ppo_micro_batch_size=64"), version), "VL303")
    assert (
        twice == []
        if version == "0.4.1"
        else "(verl's config makes ppo_micro_batch_size_per_gpu follow ppo_micro_batch_size)" in twice[0]
    )


@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.4.1", "0.7.1", "0.9.1"])
def test_vl315_a_micro_batch_the_launch_forgot(findings, version):
    """Neither `X` nor `X_per_gpu` for a role the launch runs, with dynamic batch size off: verl
    raises when the trainer starts. Judged only in a launch that sets micro batch sizes, never
    over a value only known at run time or arguments the caller may pass ("$@")."""
    micro = (
        f"{A}.ppo_micro_batch_size_per_gpu=8",
        f"{R}.log_prob_micro_batch_size_per_gpu=8",
        "algorithm.adv_estimator=grpo",
    )
    assert only(findings(main_ppo(*micro), version), "VL315") == []
    with_kl = main_ppo(*micro, f"{A}.use_kl_loss=True")
    [ref] = only(findings(with_kl, version), "VL315")
    assert ref.startswith(
        "neither actor_rollout_ref.ref.log_prob_micro_batch_size nor log_prob_micro_batch_size_per_gpu is set"
    )
    assert (
        only(
            findings(
                main_ppo(
                    *micro, f"{A}.use_kl_loss=True", "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=$MB"
                ),
                version,
            ),
            "VL315",
        )
        == []
    )
    assert only(findings(with_kl[:-1] + ' "$@"\n', version), "VL315") == []
    assert only(
        findings(main_ppo(*micro[:2], "algorithm.adv_estimator=gae"), version), "VL315"
    )  # verl's default estimator trains a critic
    # The reward model's pair: validate_config lists it up to 0.6.
    rm = only(findings(main_ppo(*micro, "reward_model.enable=True"), version), "VL315")
    assert [m.split(" nor ")[0] for m in rm] == (
        ["neither reward_model.micro_batch_size"] if version == "0.4.1" else []
    )


@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.4.1", "0.7.1"])
def test_vl316_the_sft_batch_over_torchruns_processes(findings, version):
    """fsdp_sft_trainer (0.4-0.6) splits data.train_batch_size over nproc_per_node × nnodes /
    ulysses SP ranks, then into micro batches: both asserted after torchrun started. 0.7.1 no
    longer ships that trainer (VL426 says so); a process count only known at run time is not judged."""
    sft = "#!/bin/bash\ntorchrun {} -m verl.trainer.fsdp_sft_trainer {}\n"
    bad = findings(sft.format("--standalone --nproc_per_node=8", "data.train_batch_size=100"), version)
    if version == "0.7.1":
        assert only(bad, "VL316") == [] and only(bad, "VL426")
        return
    [m] = only(bad, "VL316")
    assert m.startswith(
        "data.train_batch_size=100 is not divisible by the data-parallel size 8 (nproc_per_node × nnodes = 8)"
    )
    [m] = only(
        findings(
            sft.format("--nnodes 2 --nproc-per-node 8", "data.train_batch_size=64 data.micro_batch_size_per_gpu=3"),
            version,
        ),
        "VL316",
    )
    assert m.startswith(
        "each of the 16 data-parallel ranks gets data.train_batch_size=64 / 16 = 4, which is not divisible by"
    )
    good = sft.format(
        "--standalone --nproc_per_node=8",
        "data.train_batch_size=64 data.micro_batch_size_per_gpu=4 ulysses_sequence_parallel_size=2",
    )
    assert only(findings(good, version), "VL316") == []
    assert (
        only(
            findings(sft.format("--standalone --nproc_per_node=$NPROC", "data.train_batch_size=100"), version), "VL316"
        )
        == []
    )


@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.7.1", "0.9.1"])
def test_critic_enable_decides_over_the_estimator(findings, version):
    sizes = ("data.train_batch_size=64", f"{A}.ppo_mini_batch_size=32", "critic.ppo_mini_batch_size=128")
    assert only(findings(main_ppo("algorithm.adv_estimator=grpo", "critic.enable=True", *sizes), version), "VL302")
    assert (
        only(findings(main_ppo("algorithm.adv_estimator=gae", "critic.enable=False", *sizes), version), "VL302") == []
    )


@pytest.mark.slow
def test_vl304_follows_the_worker_main_ppo_runs(findings):
    twelve = (f"{A}.ppo_mini_batch_size=12", "data.train_batch_size=96")  # 12 × n=1 over 8 GPUs
    # 0.9.1's engine worker asserts mini_batch_size % dp == 0.
    assert only(findings(main_ppo(*twelve), "0.9.1"), "VL304")
    # 0.7.1 runs the legacy FSDP worker by default: 12 // 8 = 1, truncated without an assert (a
    # warning: the job runs, with mini batches of 8 samples, not 12) ...
    [legacy] = only(findings(main_ppo(*twelve), "0.7.1"), "VL304")
    assert "silently truncates each rank's mini batch to 12 // 8 = 1, so a mini batch is 8 samples, not 12" in legacy
    # ... unless the script picks the engine worker.
    assert only(findings(main_ppo(*twelve, "trainer.use_legacy_worker_impl=disable"), "0.7.1"), "VL304")
    # The legacy worker asserts the per-GPU mini batch stays positive: 4 // 8 = 0.
    four = (f"{A}.ppo_mini_batch_size=4", "data.train_batch_size=96")
    assert only(findings(main_ppo(*four), "0.7.1"), "VL304")
    assert only(findings(main_ppo(*four), "0.4.1"), "VL304")
    # verl 0.2 splits without asserting: the run fails elsewhere, not on this assert.
    assert only(findings(main_ppo(*four), OLD), "VL304") == []


@pytest.mark.slow
def test_vl304_mirrors_each_assert_where_the_release_has_it(all_trees, composer, tmp_path):
    """The legacy FSDP actor's split, positive-size assert and micro-batch assert are read one by
    one: verl 0.3 asserts the micro batch only for the deprecated global key, 0.2 splits without
    asserting, 0.1 divides before multiplying by rollout.n; the critic's split starts with 0.4."""

    def vl304(version: str, *overrides: str) -> list[str]:
        path = tmp_path / "run.sh"
        path.write_text(main_ppo("data.train_batch_size=96", f"{R}.log_prob_micro_batch_size_per_gpu=8", *overrides))
        report = lint_file(path, Options(verl_tree=all_trees[version]), composer)
        assert not report.errors, report.errors
        return [d.message for d in report.diagnostics if d.code == "VL304"]

    micro = (f"{A}.ppo_mini_batch_size=32", f"{A}.ppo_micro_batch_size_per_gpu=8")  # 32 / 8 GPUs = 4 per GPU
    for version in ("0.4.1", "0.7.1", "0.9.1"):
        [m] = vl304(version, *micro)
        assert m == "the per-GPU mini batch 4 (= 32 / 8) is not divisible by ppo_micro_batch_size_per_gpu=8", version
    # issue #34 item 7: where the tree splits the mini batch but has no such assert, the same values are a
    # warning that says this verl does not check it (0.2, 0.3); 0.1 divides before multiplying: nothing to mirror.
    for version in (OLD, "0.3.0.post1"):
        path = tmp_path / "run.sh"
        path.write_text(main_ppo("data.train_batch_size=96", f"{R}.log_prob_micro_batch_size_per_gpu=8", *micro))
        [d] = [
            d for d in lint_file(path, Options(verl_tree=all_trees[version]), composer).diagnostics if d.code == "VL304"
        ]
        assert d.severity == Severity.WARNING and d.message.startswith(
            "the per-GPU mini batch 4 (= 32 / 8) is not divisible by ppo_micro_batch_size_per_gpu=8: "
            "this verl does not check it; its actor divides the loss by 4 // 8 = 0 accumulation steps"
        ), version
    assert vl304("0.1", *micro) == []
    zero = (f"{A}.ppo_mini_batch_size=4", f"{A}.ppo_micro_batch_size_per_gpu=1")  # 4 // 8 = 0
    assert [m.split(" (")[0] for m in vl304("0.3.0.post1", *zero)] == [
        "ppo_mini_batch_size=4 × rollout.n=1 = 4 does not split over 8 data-parallel ranks"
    ]
    assert vl304(OLD, *zero) == [] and vl304("0.1", *zero) == []
    # 0.2 does multiply by rollout.n before splitting: a remainder truncates the mini batch there too.
    [truncated] = vl304(OLD, f"{A}.ppo_mini_batch_size=12", f"{A}.ppo_micro_batch_size_per_gpu=1")
    assert "silently truncates each rank's mini batch to 12 // 8 = 1" in truncated
    critic = (
        "algorithm.adv_estimator=gae",
        f"{A}.ppo_mini_batch_size=16",
        f"{A}.ppo_micro_batch_size_per_gpu=2",
        "critic.ppo_mini_batch_size=16",
        "critic.ppo_micro_batch_size_per_gpu=4",
    )  # the critic: 16 / 8 = 2 per GPU
    assert [m.split(" gives ")[0] for m in vl304("0.4.1", *critic)] == [
        "critic.ppo_mini_batch_size=16 × rollout.n=1 = 16 over 8 data-parallel ranks (n_gpus=8 / ulysses_sequence_parallel_size=1)"
    ]
    assert vl304("0.3.0.post1", *critic) == []


@pytest.mark.slow
def test_parallel_checks_follow_the_release(all_trees, composer, tmp_path):
    """VL306's replica check needs the async rollout's replicas, VL309 runs only without dynamic
    batch size from 0.6, VL310 covers fsdp2 only from 0.5: each as the release's code has it."""

    def found(version: str, code: str, *overrides: str, head: str = "") -> list[str]:
        path = tmp_path / "run.sh"
        path.write_text(main_ppo(*((head,) if head else ()), *overrides))
        report = lint_file(path, Options(verl_tree=all_trees[version]), composer)
        assert not report.errors, report.errors
        return [d.message for d in report.diagnostics if d.code == code]

    replica = (
        "trainer.n_gpus_per_node=8",
        "trainer.nnodes=3",
        f"{R}.tensor_model_parallel_size=12",
    )  # 24 GPUs, replicas of 12
    assert [m.split(" spans ")[0] for m in found("0.7.1", "VL306", *replica)] == ["a rollout replica of 12 GPUs"]
    assert found("0.7.1", "VL306", *replica, f"{R}.mode=sync") == []  # no replicas without the async rollout
    assert found("0.4.1", "VL306", *replica) == []  # 0.4: the workers split 24 GPUs by TP 12, no replicas
    assert found("0.4.1", "VL306", f"{R}.tensor_model_parallel_size=3")  # ... and assert that much
    megatron = (f"{A}.megatron.tensor_model_parallel_size=3",)
    head = "--config-name=ppo_megatron_trainer"
    assert found("0.7.1", "VL309", *megatron, head=head)
    assert found("0.7.1", "VL309", *megatron, f"{A}.use_dynamic_bsz=True", head=head) == []
    assert found(
        "0.4.1", "VL309", *megatron, f"{A}.use_dynamic_bsz=True", head=head
    )  # 0.4 checks it whatever the batching
    sp = (f"{A}.ulysses_sequence_parallel_size=2", "actor_rollout_ref.model.use_remove_padding=False")
    assert found("0.7.1", "VL310", *sp, f"{A}.strategy=fsdp2")
    assert found("0.4.1", "VL310", *sp, f"{A}.strategy=fsdp2") == []
    assert found("0.4.1", "VL310", *sp) and found("0.3.0.post1", "VL310", *sp)


MEGATRON_BUDGET = (
    f"{A}.use_dynamic_bsz=True",
    f"{A}.ppo_max_token_len_per_gpu=8192",
    "data.max_prompt_length=4096",
    "data.max_response_length=32768",
)


@pytest.mark.slow
@pytest.mark.parametrize(
    "version,head", [("0.9.1", "model_engine=megatron"), ("0.7.1", "--config-name=ppo_megatron_trainer")]
)
def test_vl305_megatron_budget_counts_context_parallel(findings, version, head):
    def script(cp: int) -> str:
        return main_ppo(head, *MEGATRON_BUDGET, f"{A}.megatron.context_parallel_size={cp}")

    # 8192 × CP 8 = 65536 >= 4096 + 32768: the Megatron actor multiplies the budget by CP.
    assert only(findings(script(8), version), "VL305") == []
    got = only(findings(script(2), version), "VL305")
    assert got and "× context_parallel_size=2 is below" in got[0] and "36864" in got[0]


EXPANDABLE = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
ENGINE_FROM_ENV = f"{R}.name=${{oc.env:ENGINE,vllm}}"


def test_oc_env_reads_the_script_env_not_the_default(findings):
    # ENGINE not set by the script: known only on the machine, so not the default `vllm`.
    assert only(findings(main_ppo(ENGINE_FROM_ENV, env=EXPANDABLE), "0.9.1"), "VL607") == []
    # Set by the script: its value.
    assert only(findings(main_ppo(ENGINE_FROM_ENV, env={**EXPANDABLE, "ENGINE": "vllm"}), "0.9.1"), "VL607")
    assert only(findings(main_ppo(ENGINE_FROM_ENV, env={**EXPANDABLE, "ENGINE": "sglang"}), "0.9.1"), "VL607") == []


@pytest.mark.slow
def test_oc_env_ignores_the_linters_own_environment(verl_trees, tmp_path):
    """Through the CLI, with ENGINE set in verl-lint's own process: the script's value counts."""
    script = tmp_path / "run.sh"
    script.write_text(main_ppo(f"{R}.name=${{oc.env:ENGINE}}", env={**EXPANDABLE, "ENGINE": "vllm"}))
    args = [
        sys.executable,
        "-m",
        "verl_lint.cli",
        "check",
        str(script),
        "--verl-root",
        str(verl_trees["0.9.1"].root),
        "--vllm",
        "0.12.0",
        "--format",
        "json",
    ]
    proc = subprocess.run(args, capture_output=True, text=True, env={**os.environ, "ENGINE": "sglang"})
    assert [d["code"] for d in json_findings(proc.stdout)] == ["VL607"], proc.stderr
    assert proc.returncode == 1


def test_unknown_value_read_through_oc_select_stays_unknown(findings):
    # rollout.log_prob_max_token_len_per_gpu is ${oc.select:actor...ppo_max_token_len_per_gpu,16384}:
    # the actor's value is only known at run time, so 16384 is not what the job gets.
    script = (
        "python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.ppo_max_token_len_per_gpu=$(nproc) "
        f"{A}.use_dynamic_bsz=True {R}.log_prob_use_dynamic_bsz=True data.max_prompt_length=16384 data.max_response_length=16384\n"
    )
    for version in ("0.9.1", "0.7.1"):
        assert only(findings(script, version), "VL305") == []
        # The same budget known: VL305.
        assert only(findings(script.replace("$(nproc)", "16384"), version), "VL305")


def test_vl607_needs_verl_to_start_vllm_with_sleep_mode(findings, trees, tmp_path):
    script = main_ppo(f"{R}.name=vllm", env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
    assert only(findings(script, OLD), "VL607")  # vllm_rollout_spmd.py passes enable_sleep_mode=True
    assert only(findings(script, "0.9.1"), "VL607")
    # The same release without its vLLM>=0.7 rollout (as verl 0.1 vendored in TinyZero/Logic-RL,
    # which drives its own patched vLLM): nothing enables sleep mode, so the rule does not apply.
    root = tmp_path / "verl-old"
    shutil.copytree(trees[OLD].root / "verl", root / "verl")
    (root / "verl" / "workers" / "rollout" / "vllm_rollout" / "vllm_rollout_spmd.py").unlink()
    assert only(findings(script, tree_at(root, "test")), "VL607") == []


def test_vl300_names_the_checks_an_unknown_value_skipped(findings):
    script = f"python3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=$(nproc) {A}.ppo_mini_batch_size=12 data.train_batch_size=96\n"
    found = findings(script, "0.9.1")
    assert only(found, "VL304") == []  # the GPU count is not replaced by the default 8
    (note,) = only(found, "VL300")
    assert "`trainer.n_gpus_per_node`" in note and "VL304" in note and "VL302" not in note
    # verl's own mandatory `???` (0.9.1's rollout.name) is the user's to fill in, not "known at run time".
    assert "rollout.name" not in note
    assert only(findings(script.replace("$(nproc)", "8"), "0.9.1"), "VL300") == []


def test_rule_page_states_the_evidence():
    proc = subprocess.run([sys.executable, "-m", "verl_lint.cli", "rule", "VL302"], capture_output=True, text=True)
    assert proc.returncode == 0 and "Runs on a verl tree whose source has: " in proc.stdout
    assert "verl/workers/config/actor.py" in proc.stdout and "verl/trainer/ppo/ray_trainer.py" in proc.stdout


def test_vl304_megatron_dp_counts_tp_pp_cp(findings):
    def script(head: str, cp: int) -> str:
        sizes = (f"{A}.megatron.tensor_model_parallel_size=2", f"{A}.megatron.context_parallel_size={cp}")
        return main_ppo(head, f"{A}.ppo_mini_batch_size=6", "data.train_batch_size=96", *sizes)

    # 0.9.1's engine worker: dp = 8 GPUs / (TP 2 × PP 1 × CP cp); 6 % 4 != 0, 6 % 2 == 0.
    got = only(findings(script("model_engine=megatron", 1), "0.9.1"), "VL304")
    assert got and "over 4 data-parallel ranks" in got[0] and "context_parallel_size=1" in got[0]
    assert only(findings(script("model_engine=megatron", 2), "0.9.1"), "VL304") == []
    # 0.7.1's default legacy Megatron worker truncates without an assert.
    assert only(findings(script("--config-name=ppo_megatron_trainer", 1), "0.7.1"), "VL304") == []


@pytest.mark.slow
def test_a_conflict_in_verls_own_defaults_is_info_once(trees, tmp_path):
    """A release whose shipped actor config has a mini batch above its default train batch (1024):
    with the script choosing neither, it is verl's problem, reported once per run as info."""
    root = tmp_path / "verl-defaults"
    shutil.copytree(trees["0.9.1"].root / "verl", root / "verl")
    actor = root / "verl" / "trainer" / "config" / "actor" / "actor.yaml"
    actor.write_text(actor.read_text().replace("ppo_mini_batch_size: 256", "ppo_mini_batch_size: 4096", 1))

    def vl302(text: str) -> list[tuple[str, str]]:
        script = tmp_path / "run.sh"
        script.write_text(text)
        args = [
            sys.executable,
            "-m",
            "verl_lint.cli",
            "check",
            str(script),
            "--verl-root",
            str(root),
            "--format",
            "json",
            "--fail-on",
            "never",
        ]
        proc = subprocess.run(args, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return [(d["severity"], d["message"]) for d in json_findings(proc.stdout) if d["code"] == "VL302"]

    got = vl302(main_ppo(f"{R}.name=vllm") + main_ppo(f"{R}.name=sglang"))  # two launches, one finding
    assert [sev for sev, _ in got] == ["info"] and "in verl's own default config" in got[0][1]
    # The script choosing one of the two values makes it the user's error.
    assert [sev for sev, _ in vl302(main_ppo("data.train_batch_size=2048"))] == ["error"]


def test_size_rules_split_by_theme_and_all_registered():
    """The 3xx rules live in modules under 600 lines with their imports at module level, and
    the pack registers every one of VL300-VL337 (VL320-VL324, VL328, VL329 are the model's; VL325-VL327,
    VL330 its memory's), each from the module of its theme."""
    rules = Path(__file__).parent.parent / "verl_lint" / "rules"
    names = (
        "sizes.py",
        "batch_sizes.py",
        "token_budgets.py",
        "micro_batches.py",
        "parallel_sizes.py",
        "sft_sizes.py",
        "model_sizes.py",
        "broken_defaults.py",
        "worker_sizes.py",
        "memory_fit.py",
        "megatron_model.py",
    )
    for name in names:
        assert len((rules / name).read_text().splitlines()) < 600, name
        assert local_imports(rules / name) == [], name
    where = {r.code: r.check.__module__.rsplit(".", 1)[1] for r in REGISTRY if r.code.startswith("VL3")}
    assert sorted(where) == [f"VL3{i:02d}" for i in range(38)]
    assert {c for c, m in where.items() if m == "model_sizes"} == {
        "VL320",
        "VL321",
        "VL322",
        "VL323",
        "VL324",
        "VL328",
        "VL329",
    }
    assert {c for c, m in where.items() if m == "memory_fit"} == {"VL325", "VL326", "VL327", "VL330"}
    assert where["VL316"] == "sft_sizes" and where["VL317"] == where["VL336"] == "broken_defaults"
    assert {c for c, m in where.items() if m == "megatron_model"} == {"VL334", "VL335"}
    assert {c for c, m in where.items() if m == "micro_batches"} == {"VL303", "VL315", "VL332"}
    assert {c for c, m in where.items() if m == "parallel_sizes"} == {
        "VL306",
        "VL307",
        "VL308",
        "VL309",
        "VL310",
        "VL314",
        "VL333",
    }
    assert {c for c, m in where.items() if m == "worker_sizes"} == {"VL318", "VL319", "VL331"}
