"""VL210 (a micro batch size under its role's dynamic batch size) and VL112 (an empty override
value), on real verl releases: each size is judged by its own section's switch, in scripts and
in a project's own config file, and an empty value is reported without silencing anything."""

from __future__ import annotations

import pytest
from conftest import NEWEST, OLDER, OLDEST, across_releases

A = "actor_rollout_ref.actor"
R = "actor_rollout_ref.rollout"
REF = "actor_rollout_ref.ref"

EMPTY_REF = (
    "#!/bin/bash\nREF_DYN=\n"
    f"python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm {A}.use_dynamic_bsz=True \\\n"
    f"    {REF}.log_prob_use_dynamic_bsz=$REF_DYN {A}.ppo_micro_batch_size_per_gpu=4 \\\n"
    f"    {R}.log_prob_micro_batch_size_per_gpu=8 critic.ppo_micro_batch_size_per_gpu=2 trainer.experiment_name= $ARGS_FROM_CALLER\n"
)


def _at(report, code):
    return sorted((d.span.line, d.span.col) for d in report.diagnostics if d.code == code)


@pytest.mark.parametrize("version", across_releases())
def test_an_empty_switch_is_reported_and_silences_no_other_role(lint, version):
    report = lint(EMPTY_REF, version)
    # the actor's, the rollout's and the critic's sizes: each under its own switch, all on
    assert _at(report, "VL210") == [(4, 61), (5, 5), (5, 67)], [(d.code, d.span, d.message) for d in report.diagnostics]
    assert {d.severity.name for d in report.diagnostics if d.code == "VL210"} == {"WARNING"}  # the value is dead
    rollout = next(d for d in report.diagnostics if d.code == "VL210" and d.span.line == 5 and d.span.col == 5)
    assert f"{R}.log_prob_max_token_len_per_gpu=16384" in rollout.message
    # the empty switch, at its override (a text key set to '' is not judged)
    [empty] = [d for d in report.diagnostics if d.code == "VL112"]
    assert (empty.span.line, empty.span.col) == (4, 5) and "reads it as False" in empty.message, empty.message


def test_a_role_with_its_dynamic_batch_size_off_keeps_its_micro_batch(lint):
    """(verl 0.7+'s engine workers assert the actor's and the rollout's switches agree: 0.5.0's FSDP workers.)"""
    report = lint(
        f"#!/bin/bash\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm {A}.use_dynamic_bsz=True "
        f"{R}.log_prob_use_dynamic_bsz=False {R}.log_prob_micro_batch_size_per_gpu=8 {A}.ppo_micro_batch_size_per_gpu=null\n",
        OLDEST,
    )
    assert _at(report, "VL210") == [], [(d.code, d.message) for d in report.diagnostics]


def test_an_empty_number_says_what_verl_does_with_it(lint):
    report = lint(
        f"#!/bin/bash\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm {A}.ppo_epochs= {A}.use_kl_loss=\n"
    )
    messages = {d.span.col: d.message for d in report.diagnostics if d.code == "VL112"}
    assert "not an int" in messages[70] and "TypeError" in messages[70], messages
    assert "(as without this override)" in messages[106], messages  # use_kl_loss is False by default


def test_a_micro_batch_in_the_project_config_is_reported_at_its_line(project):
    report = project(
        "actor_rollout_ref:\n  actor:\n    use_dynamic_bsz: true\n    ppo_micro_batch_size_per_gpu: 4\n  rollout:\n    name: vllm\n"
    )
    found = [(d.span.path, d.span.line, d.span.col) for d in report.diagnostics if d.code == "VL210"]
    assert found == [("config/my_grpo.yaml", 10, 5)], [(d.code, d.span, d.message) for d in report.diagnostics]


@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.2.0.post2", "0.3.0.post1", "0.4.1", "0.6.1", "0.7.0"])
def test_every_release_with_dynamic_batch_size_is_judged_alike(lint, verl_trees, version):
    """Every release that has dynamic batch size (0.2 on; the releases across_releases leaves out):
    the single ppo_trainer.yaml of 0.2-0.4, whose sections are found by what it holds, and the
    split configs after. The same warnings, and the empty switch reported without silencing any."""
    verl_trees[version]  # skips when that release is not in the cache
    report = lint(EMPTY_REF, version)
    assert _at(report, "VL210") == [(4, 61), (5, 5), (5, 67)], [(d.code, d.message) for d in report.diagnostics]
    assert {d.severity.name for d in report.diagnostics if d.code == "VL210"} == {"WARNING"}
    assert _at(report, "VL112") == [(4, 5)]


def _on_megatron(script: str, *overrides: str) -> str:
    return script.replace(
        "main_ppo actor_rollout_ref.rollout.name=vllm",
        "main_ppo --config-name=ppo_megatron_trainer " + " ".join((*overrides, "actor_rollout_ref.rollout.name=vllm")),
    )


@pytest.mark.parametrize("version", across_releases())
def test_megatron_roles_are_judged_where_the_engine_workers_pack_their_micro_batches(lint, version):
    """verl 0.9.1 runs Megatron through the engine workers only, which pack micro batches by
    tokens under dynamic batch size as for FSDP: the same warnings. The legacy Megatron workers,
    the default before, divide and require the size (not dead): nothing there, unless the launch
    picks the engine workers (`trainer.use_legacy_worker_impl=disable`, 0.6-0.7), which it does for
    the actor, rollout and reference, not the critic (0.7.1 `main_ppo.py:131,195`)."""
    legacy = version != NEWEST
    at = _at(lint(_on_megatron(EMPTY_REF), version), "VL210")
    assert at == ([] if legacy else [(4, 61), (5, 5), (5, 67)]), at
    if version == OLDER:
        engine = lint(_on_megatron(EMPTY_REF, "trainer.use_legacy_worker_impl=disable"), version)
        assert _at(engine, "VL210") == [(4, 61), (5, 5)], [(d.code, d.message) for d in engine.diagnostics]
