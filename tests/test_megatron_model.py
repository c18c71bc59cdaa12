"""Megatron's parallel sizes against the model: pipeline and virtual pipeline against the layers
(VL334), expert parallelism against the experts (VL335), tensor parallelism against the query
groups as the installed Megatron-Core decides it (VL323), on the table's models and a local
config.json, on verl's engine workers (0.9.1) and the legacy Megatron trainer config (0.7.1)."""

from __future__ import annotations

import json

import pytest
from conftest import NEWEST, OLDER, codes

from verl_lint.registry import main_ppo

A = "actor_rollout_ref.actor"
M = "actor_rollout_ref.model"
GRPO = "algorithm.adv_estimator=grpo"


def megatron(version: str, *overrides: str) -> str:
    if version == NEWEST:
        return main_ppo("model_engine=megatron", GRPO, *overrides)
    return main_ppo(GRPO, *overrides).replace("main_ppo ", "main_ppo --config-name=ppo_megatron_trainer ", 1)


@pytest.mark.parametrize("version", [NEWEST, pytest.param(OLDER, marks=pytest.mark.slow)])
def test_pipeline_against_layers(lint, version):
    qwen = f"{M}.path=Qwen/Qwen2.5-7B-Instruct"  # 28 layers
    bad = lint(megatron(version, qwen, f"{A}.megatron.pipeline_model_parallel_size=8"))
    assert "VL334" in codes(bad)
    d = next(d for d in bad.diagnostics if d.code == "VL334")
    assert "does not divide the 28 layers" in d.message and "num_layers should be divisible" in d.message
    assert d.key == f"{A}.megatron.pipeline_model_parallel_size" and "2, 4, 7, 14" in d.help
    assert "VL334" not in codes(lint(megatron(version, qwen, f"{A}.megatron.pipeline_model_parallel_size=4")))
    # 28 layers over PP 2: 14 per stage, which VPP 4 does not split; VPP 7 does
    vpp = f"{A}.megatron.virtual_pipeline_model_parallel_size"
    pp2 = f"{A}.megatron.pipeline_model_parallel_size=2"
    bad_vpp = lint(megatron(version, qwen, pp2, f"{vpp}=4"))
    assert [d.key for d in bad_vpp.diagnostics if d.code == "VL334"] == [vpp]
    assert "14 layers of each of the 2 pipeline stages" in bad_vpp.diagnostics[-1].message
    assert "VL334" not in codes(lint(megatron(version, qwen, pp2, f"{vpp}=7")))


def test_uneven_layers_are_not_judged(lint):
    qwen = f"{M}.path=Qwen/Qwen2.5-7B-Instruct"
    first = f"+{A}.megatron.override_transformer_config.num_layers_in_first_pipeline_stage=6"
    report = lint(megatron(NEWEST, qwen, f"{A}.megatron.pipeline_model_parallel_size=8", first))
    assert "VL334" not in codes(report)


def test_pipeline_on_a_local_model_and_the_reference_policy(lint, tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    cfg = {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192, "num_attention_heads": 16}
    cfg |= {"num_key_value_heads": 8, "num_hidden_layers": 30, "vocab_size": 32000, "max_position_embeddings": 8192}
    (d / "config.json").write_text(json.dumps(cfg))
    report = lint(
        megatron(
            NEWEST,
            f"{M}.path={d}",
            f"{A}.megatron.pipeline_model_parallel_size=2",
            "actor_rollout_ref.ref.megatron.pipeline_model_parallel_size=4",
        )
    )
    found = [d for d in report.diagnostics if d.code == "VL334"]
    assert [d.key for d in found] == ["actor_rollout_ref.ref.megatron.pipeline_model_parallel_size"]
    assert found[0].message.startswith("ref ") and "30 layers" in found[0].message


@pytest.mark.parametrize("version", [NEWEST, pytest.param(OLDER, marks=pytest.mark.slow)])
def test_expert_parallel_against_experts(lint, version):
    moe = f"{M}.path=deepseek-ai/DeepSeek-V2-Lite"  # 64 routed experts
    ep = f"{A}.megatron.expert_model_parallel_size"
    bad = lint(megatron(version, moe, f"{ep}=3", "trainer.n_gpus_per_node=6"))
    assert "VL335" in codes(bad) and "64 experts" in next(d.message for d in bad.diagnostics if d.code == "VL335")
    assert "VL335" not in codes(lint(megatron(version, moe, f"{ep}=4")))
    # a dense model: Megatron refuses (an error), which replaces VL324's "no effect" warning at that key
    dense = lint(megatron(version, f"{M}.path=Qwen/Qwen2.5-7B-Instruct", f"{ep}=2"))
    assert "VL335" in codes(dense) and "VL324" not in codes(dense)
    assert "num_moe_experts must be non None" in next(d.message for d in dense.diagnostics if d.code == "VL335")


def test_unknown_model_is_silent(lint):
    report = lint(megatron(NEWEST, f"{M}.path=acme/secret", f"{A}.megatron.pipeline_model_parallel_size=8"))
    assert "VL334" not in codes(report)
    assert "VL334" in next(d.message for d in report.diagnostics if d.code == "VL329")


def test_tp_over_query_groups_follows_the_installed_megatron_core(lint):
    """Qwen2.5-3B: 16 heads, 2 query groups. TP 4 divides the heads and is a multiple of the groups:
    Megatron-Core up to 0.15 raises, 0.16 replicates the groups; unknown: a warning saying so."""
    launch = megatron(NEWEST, f"{M}.path=Qwen/Qwen2.5-3B-Instruct", f"{A}.megatron.tensor_model_parallel_size=4")
    unknown = [d for d in lint(launch).diagnostics if d.code == "VL323"]
    assert len(unknown) == 1 and unknown[0].severity.name == "WARNING" and "up to 0.15" in unknown[0].message
    old = [d for d in lint(launch, versions={"megatron_core": "0.13.0"}).diagnostics if d.code == "VL323"]
    assert len(old) == 1 and old[0].severity.name == "ERROR" and "Megatron-Core 0.13.0 raises" in old[0].message
    assert "VL323" not in codes(lint(launch, versions={"megatron_core": "0.16.0"}))
    # a TP that is neither a multiple nor a divisor of the groups is refused by every release
    bad = megatron(NEWEST, f"{M}.path=Qwen/Qwen2.5-7B-Instruct", f"{A}.megatron.tensor_model_parallel_size=8")
    assert [
        d.severity.name for d in lint(bad, versions={"megatron_core": "0.16.0"}).diagnostics if d.code == "VL323"
    ] == ["ERROR"]


def test_a_megatron_critic_is_judged_against_its_own_model(lint):
    """GAE trains a critic; its Megatron sizes are judged against critic.model.path (30 layers here)."""
    report = lint(
        main_ppo(
            "model_engine=megatron",
            f"{M}.path=Qwen/Qwen2.5-7B-Instruct",
            "critic.model.path=Qwen/Qwen2.5-3B-Instruct",  # 36 layers
            "critic.megatron.pipeline_model_parallel_size=8",
            f"{A}.megatron.pipeline_model_parallel_size=4",
        )
    )
    found = [d for d in report.diagnostics if d.code == "VL334"]
    assert [d.key for d in found] == ["critic.megatron.pipeline_model_parallel_size"], report.diagnostics
    assert found[0].message.startswith("critic ") and "36 layers of Qwen/Qwen2.5-3B-Instruct" in found[0].message
