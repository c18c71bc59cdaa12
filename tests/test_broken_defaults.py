"""Defaults of verl's config that the user's other values break (VL317, VL306), reported at
the value the user set and naming the default with the line of verl's YAML that ships it, on
real releases."""

from __future__ import annotations

import pytest
from conftest import NEWEST, OLDEST

R = "actor_rollout_ref.rollout"
LONG = f"#!/bin/bash\npython3 -m verl.trainer.main_ppo {R}.name=vllm data.max_prompt_length=2048 data.max_response_length=8192 {{extra}}\n"


def test_the_default_batched_token_budget_below_the_sequence_is_reported_at_the_length_set(lint):
    report = lint(LONG.format(extra=""), OLDEST)
    [d] = [d for d in report.diagnostics if d.code == "VL317"]
    assert (d.span.line, d.span.col) == (2, 98), d.span  # data.max_response_length=8192
    assert "left at verl's default 8192 (verl/trainer/config/rollout/rollout.yaml:44)" in d.message, d.message
    assert (
        "2048 + 8192 = 10240" in d.message
        and "prompt_length + response_length" in d.message
        and "vllm_rollout_spmd.py:" in d.message
    ), d.message


def test_a_budget_that_fits_the_async_server_and_a_release_without_the_check_are_quiet(lint):
    for extra, version in ((f"{R}.max_num_batched_tokens=10240", OLDEST), (f"{R}.mode=async", OLDEST), ("", NEWEST)):
        assert "VL317" not in [d.code for d in lint(LONG.format(extra=extra), version).diagnostics], (extra, version)


def test_without_chunked_prefill_the_model_length_verl_computes_is_used(lint):
    report = lint(LONG.format(extra=f"{R}.enable_chunked_prefill=False"), OLDEST)
    assert [d.code for d in report.diagnostics if d.code in ("VL311", "VL317")] == ["VL311"], report.diagnostics


def test_the_default_rollout_tp_above_the_gpus_names_where_it_comes_from(lint):
    report = lint(
        f"#!/bin/bash\npython3 -m verl.trainer.main_ppo {R}.name=vllm trainer.n_gpus_per_node=1 trainer.nnodes=1\n"
    )
    [d] = [d for d in report.diagnostics if d.code == "VL306"]
    assert "tensor_model_parallel_size=2 is verl's default, verl/trainer/config/rollout/rollout.yaml:" in d.message, (
        d.message
    )


def test_the_sglang_rollout_takes_no_batched_token_budget(lint):
    script = LONG.format(extra=f"{R}.enable_chunked_prefill=False").replace(f"{R}.name=vllm", f"{R}.name=sglang")
    assert not {"VL311", "VL317"} & {d.code for d in lint(script, OLDEST).diagnostics}


GEN = "#!/bin/bash\npython3 -m verl.trainer.main_generation {extra}\n"


@pytest.mark.network
def test_the_generation_batch_below_half_its_data_parallel_size_is_reported_where_set(lint):
    """verl 0.2's generation app pads a batch with its own rows: 2 rows over 8 ranks cannot be padded."""
    [d] = [d for d in lint(GEN.format(extra="data.batch_size=2"), "0.2.0.post2").diagnostics if d.code == "VL336"]
    assert d.key == "data.batch_size" and "data-parallel size 8" in d.message and "main_generation.py:" in d.message
    # the default batch (128) broken by the GPUs the user asks for: at the GPUs, naming the default's line
    many = lint(GEN.format(extra="trainer.nnodes=4 trainer.n_gpus_per_node=128"), "0.2.0.post2")
    [d] = [d for d in many.diagnostics if d.code == "VL336"]
    assert d.key == "trainer.n_gpus_per_node" and "default 128 (verl/trainer/config/generation.yaml:" in d.message
    for ok in ("data.batch_size=4", "trainer.nnodes=4", "data.batch_size=8 rollout.tensor_model_parallel_size=2"):
        assert "VL336" not in [d.code for d in lint(GEN.format(extra=ok), "0.2.0.post2").diagnostics], ok


@pytest.mark.network
def test_a_generation_batch_padded_to_the_data_parallel_size_but_not_the_workers_is_reported(lint):
    """verl#473: verl 0.1-0.2 pad to world / TP, but generate_sequences splits over every worker."""
    for version in ("0.1", "0.2.0.post2"):
        script = GEN.format(extra="trainer.n_gpus_per_node=2 rollout.tensor_model_parallel_size=2 data.batch_size=1")
        [d] = [d for d in lint(script, version).diagnostics if d.code == "VL336"]
        assert d.key == "data.batch_size" and "only support equal chunk" in d.message, (version, d.message)
        # 2 rows padded to 4 (dp 4 on 8 GPUs with TP 2) do not split into 8 workers either
        padded = lint(GEN.format(extra="data.batch_size=2 rollout.tensor_model_parallel_size=2"), version)
        [d] = [d for d in padded.diagnostics if d.code == "VL336"]
        assert "pads it to 4 rows" in d.message and "all 8 workers" in d.message, d.message
    # verl 0.3 pads to the workers itself
    assert "VL336" not in [d.code for d in lint(script, "0.3.0.post1").diagnostics]


def test_the_generation_app_that_pads_with_pad_dataproto_is_quiet(lint):
    assert "VL336" not in [d.code for d in lint(GEN.format(extra="data.batch_size=1")).diagnostics]
