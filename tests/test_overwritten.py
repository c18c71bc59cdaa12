"""VL238: keys a config dataclass's __post_init__ replaces, read from the tree being linted."""

from __future__ import annotations

import pytest
from conftest import NEWEST, OLDER

SP, TP = (
    "actor_rollout_ref.actor.megatron.sequence_parallel",
    "actor_rollout_ref.actor.megatron.tensor_model_parallel_size",
)


def script(*overrides: str) -> str:
    words = [
        "python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer actor_rollout_ref.rollout.name=vllm",
        *overrides,
    ]
    return "#!/bin/bash\nTP=1\n" + " \\\n  ".join(words) + "\n"


def found(report):
    return [
        (d.span.line, d.span.col, d.message, [r.key for r in d.related])
        for d in report.diagnostics
        if d.code == "VL238"
    ]


@pytest.mark.parametrize(
    "version, legacy",
    [(NEWEST, ""), pytest.param(OLDER, "trainer.use_legacy_worker_impl=disable", marks=pytest.mark.slow)],
)
def test_sequence_parallel_is_switched_off_with_one_tensor_parallel_rank(lint, version, legacy):
    bad = script(*filter(None, [legacy]), f"{TP}=$TP", f"{SP}=True")
    [(line, col, msg, related)] = found(lint(bad, version))
    assert (line, col) == (5 + bool(legacy), 3)
    assert "McoreEngineConfig.__post_init__ (verl/workers/config/engine.py:" in msg
    assert (
        "sets sequence_parallel = `False` when `tensor_model_parallel_size == 1` (here tensor_model_parallel_size=1)"
        in msg
    )
    assert related == [TP]
    # Nothing is lost: verl assigns the value the script gives, or the test does not hold.
    assert found(lint(script(*filter(None, [legacy]), f"{TP}=1", f"{SP}=False"), version)) == []
    assert found(lint(script(*filter(None, [legacy]), f"{TP}=2", f"{SP}=True"), version)) == []
    assert found(lint(script(*filter(None, [legacy]), f"{TP}=$UNSET", f"{SP}=True"), version)) == []


@pytest.mark.slow
def test_silent_where_the_legacy_worker_reads_the_raw_section(lint):
    """verl 0.7.1's default (legacy) Megatron worker builds the model from `config.actor.megatron` itself."""
    assert found(lint(script(f"{TP}=1", f"{SP}=True"), OLDER)) == []
