"""Launches users posted in issue trackers (verl's and projects vendoring it), each reduced to a
minimal script of this project's own and linted against the release the user ran: the class of
mistake must be reported where verl would fail, and stay quiet where that release does not fail."""

from __future__ import annotations

import pytest

PPO = "#!/bin/bash\npython3 -m verl.trainer.main_ppo {extra}\n"
SMALL_GRPO = (
    "algorithm.adv_estimator=grpo actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1 "
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1 actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=1"
)


def codes(report, code):
    return [d for d in report.diagnostics if d.code == code]


@pytest.mark.network
def test_fewer_prompts_than_rollout_workers_stop_the_first_step_on_verl_0_1_to_0_3(lint):
    """verl#606 (https://github.com/volcengine/verl/issues/606): 32 prompts a step on 16 nodes of
    8 GPUs; train_batch_size x rollout.n = 256 divides the 128 GPUs, so verl's validation passes,
    and generate_sequences splits the 32 prompts over 128 workers."""
    script = PPO.format(
        extra=f"{SMALL_GRPO} data.train_batch_size=32 actor_rollout_ref.actor.ppo_mini_batch_size=32 "
        "actor_rollout_ref.rollout.n=8 actor_rollout_ref.rollout.tensor_model_parallel_size=2 "
        "trainer.n_gpus_per_node=8 trainer.nnodes=16"
    )
    for version in ("0.2.0.post2", "0.3.0.post1"):
        [d] = codes(lint(script, version), "VL337")
        assert d.key == "trainer.nnodes" and "32 prompts" in d.message and "128 rollout workers" in d.message, (
            version,
            d.message,
        )
    # 0.4.1 pads a dispatched batch that asks for it, 0.5+ repeats the prompts before generating
    for version in ("0.4.1", "0.5.0"):
        assert not codes(lint(script, version), "VL337"), version
    whole = script.replace("data.train_batch_size=32", "data.train_batch_size=128")
    assert not codes(lint(whole, "0.2.0.post2"), "VL337")


@pytest.mark.network
def test_a_batch_below_the_gpus_is_the_validations_finding_where_verl_validates_it(lint):
    """TinyZero#47 / Logic-RL#13 (https://github.com/Jiayi-Pan/TinyZero/issues/47): 2 prompts a step
    on 4 GPUs. verl 0.1 validates nothing and stops at the first step's dispatch (VL337); verl
    0.2-0.3 assert train_batch_size x rollout.n against the GPU count, whatever the dynamic batch
    size (VL301), before any worker starts."""
    script = PPO.format(
        extra="data.train_batch_size=2 actor_rollout_ref.actor.ppo_mini_batch_size=2 trainer.n_gpus_per_node=4"
    )
    report = lint(script, "0.1")
    assert [d.code for d in report.diagnostics if d.code in ("VL301", "VL337")] == ["VL337"], report.diagnostics
    dynamic = script.replace("trainer.n_gpus", "actor_rollout_ref.actor.use_dynamic_bsz=True trainer.n_gpus")
    for version in ("0.2.0.post2", "0.3.0.post1"):
        found = [d.code for d in lint(dynamic, version).diagnostics if d.code in ("VL301", "VL337")]
        assert found == ["VL301"], (version, found)
    # from 0.4 verl skips the check under dynamic batch size
    assert not codes(lint(dynamic, "0.4.1"), "VL301")


@pytest.mark.network
def test_a_global_critic_micro_batch_below_the_gpus_is_reported_where_verl_does_not_check_it(lint):
    """RAGEN#22 (https://github.com/mll-lab-nu/RAGEN/issues/22): critic.ppo_micro_batch_size=1 on
    4 GPUs; verl 0.1's critic worker floors it to 0 and the first update divides by it. verl 0.2
    asserts it in the config validation (a critic is trained for GAE: 0.2 spells it 'gae')."""
    script = PPO.format(
        extra="data.train_batch_size=8 actor_rollout_ref.actor.ppo_mini_batch_size=8 "
        "actor_rollout_ref.actor.ppo_micro_batch_size=8 critic.ppo_mini_batch_size=8 critic.ppo_micro_batch_size=1 "
        "trainer.n_gpus_per_node=4"
    )
    [d] = codes(lint(script, "0.1"), "VL332")
    assert d.key == "critic.ppo_micro_batch_size" and "does not check it" in d.message, d.message
    assert "ZeroDivisionError" in d.message, d.message
    [d] = codes(lint(script, "0.2.0.post2"), "VL332")
    assert "a bare assert (AssertionError, no message) in validate_config" in d.message, d.message
    assert not codes(
        lint(script.replace("critic.ppo_micro_batch_size=1", "critic.ppo_micro_batch_size=4"), "0.1"), "VL332"
    )
    # no critic under GRPO
    assert not codes(
        lint(script.replace("data.train", "algorithm.adv_estimator=grpo data.train"), "0.2.0.post2"), "VL332"
    )


@pytest.mark.network
def test_chunked_prefill_off_below_the_data_length_on_verl_0_2(lint):
    """verl#189 (https://github.com/volcengine/verl/issues/189, fixed by PR #259's default): verl
    0.2 gives vLLM prompt_length + response_length as the model length (it has no max_model_len
    key) and the batched-token budget as set; without chunked prefill vLLM refuses a budget below it."""
    script = PPO.format(
        extra="data.max_prompt_length=1024 data.max_response_length=8192 "
        "actor_rollout_ref.rollout.enable_chunked_prefill=False"
    )
    [d] = codes(lint(script, "0.2.0.post2"), "VL311")
    assert "1024 + 8192 = 9216" in d.message and "null" not in d.message, d.message
    fits = script.replace("=False", "=False actor_rollout_ref.rollout.max_num_batched_tokens=9216")
    assert not codes(lint(fits, "0.2.0.post2"), "VL311")
    # chunked prefill on (0.2's default): vLLM takes the budget
    assert not codes(lint(script.replace("=False", "=True"), "0.2.0.post2"), "VL311")
