"""Which workers a launch runs, read from its entry point (rules/roles.py), against real verl
releases: the reference-policy worker decides VL222 (its offload setting) and the reference's
micro-batch pair of VL303/VL315."""

from __future__ import annotations

import shutil

import pytest

from verl_lint.launch.locate import tree_at
from verl_lint.registry import main_ppo
from verl_lint.runner import lint_file
from verl_lint.runs import Options

A = "actor_rollout_ref.actor"
R = "actor_rollout_ref.rollout"
OFFLOAD = "actor_rollout_ref.ref.fsdp_config.param_offload=False"


@pytest.fixture
def codes(verl_trees, composer, tmp_path):
    """codes(script, version_or_tree, code) -> the messages of `code` in a real lint of the script."""

    def run(text: str, where, code: str) -> list[str]:
        path = tmp_path / "run.sh"
        path.write_text(text)
        tree = verl_trees[where] if isinstance(where, str) else where
        report = lint_file(path, Options(verl_tree=tree), composer)
        assert not report.errors, report.errors
        return [d.message for d in report.diagnostics if d.code == code]

    return run


@pytest.mark.parametrize("version", ["0.7.1", pytest.param("0.4.1", marks=pytest.mark.slow)])
def test_vl222_needs_a_reference_worker(codes, version):
    """main_ppo creates the reference worker only with a KL loss or an in-reward KL: without one
    there is no reference model, and its offload setting is no finding."""
    assert codes(main_ppo(f"{A}.use_kl_loss=True", OFFLOAD), version, "VL222")
    assert codes(main_ppo("algorithm.use_kl_in_reward=True", OFFLOAD), version, "VL222")
    assert codes(main_ppo(f"{A}.use_kl_loss=False", OFFLOAD), version, "VL222") == []
    assert codes(main_ppo(OFFLOAD), version, "VL222") == []  # both off by default
    # Only known at run time: maybe no reference worker, so no claim about it.
    unknown = f"#!/bin/bash\npython3 -m verl.trainer.main_ppo {R}.name=vllm {A}.use_kl_loss=$KL {OFFLOAD}\n"
    assert codes(unknown, version, "VL222") == []


@pytest.mark.slow
def test_the_entry_points_own_wiring_decides(codes, verl_trees, tmp_path):
    """An entry point that wires the reference worker under its own condition (a project's
    `actor.use_ref`, as RAGEN's train.py does) is read as written; one whose wiring is not in
    its file stays silent."""
    root = tmp_path / "verl-own-wiring"
    shutil.copytree(verl_trees["0.7.1"].root / "verl", root / "verl")
    main = root / "verl" / "trainer" / "main_ppo.py"
    text = main.read_text()
    assert text.count("        if need_reference_policy(config):\n") == 1
    main.write_text(
        text.replace(
            "        if need_reference_policy(config):\n",
            '        if config.actor_rollout_ref.actor.get("use_ref", False):\n',
        )
    )
    tree = tree_at(root, "test")
    assert codes(main_ppo(f"{A}.use_kl_loss=True", OFFLOAD), tree, "VL222") == []
    assert codes(main_ppo(f"+{A}.use_ref=True", OFFLOAD), tree, "VL222")
    # The mapping filled somewhere this file does not show: not known, so silent.
    other = tmp_path / "verl-unread-wiring"
    shutil.copytree(verl_trees["0.7.1"].root / "verl", other / "verl")
    hidden = text.replace(
        "self.role_worker_mapping[Role.RefPolicy] = ray.remote(ref_policy_cls)", "self.add_ref_role(ref_policy_cls)"
    )
    (other / "verl" / "trainer" / "main_ppo.py").write_text(
        hidden.replace('self.mapping[Role.RefPolicy] = "global_pool"', "pass")
    )
    assert codes(main_ppo(f"{A}.use_kl_loss=True", OFFLOAD), tree_at(other, "test"), "VL222") == []


MICRO = (
    f"{A}.ppo_micro_batch_size_per_gpu=8",
    f"{R}.log_prob_micro_batch_size_per_gpu=8",
    "algorithm.adv_estimator=grpo",
)


@pytest.mark.slow
@pytest.mark.parametrize(
    "version,checked",
    [("0.2.0.post2", True), ("0.3.0.post1", True), ("0.4.1", False), ("0.7.1", False), ("0.9.1", False)],
)
def test_the_reference_micro_batch_pair_is_checked_as_the_release_decides(codes, version, checked):
    """verl 0.2-0.3 check the reference's micro batch pair in every launch (main_ppo always adds
    the reference worker); from 0.4 only with a KL loss or in-reward KL."""
    ref = [m for m in codes(main_ppo(*MICRO), version, "VL315") if "actor_rollout_ref.ref." in m]
    assert bool(ref) == checked
    assert [
        m for m in codes(main_ppo(*MICRO, f"{A}.use_kl_loss=True"), version, "VL315") if "actor_rollout_ref.ref." in m
    ]
