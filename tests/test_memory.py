"""Memory as findings: the rollout's weights and KV cache against vLLM's share of the GPU
(VL325, VL326), the training state's lower bound against the GPU (VL327), each fired on a
local model directory, a cached hub model and a table model and silent on a launch that fits;
no GPU known: silent, said once per run (VL330). The GPU from --gpu / --gpu-memory on check,
the `gpu` setting, and a given device total in the callback's adapter."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import NEWEST, OLDEST, codes, json_findings
from hydra import compose, initialize_config_dir
from test_callback import config_dir
from test_models import CONFIG, _hub_cache, _model_dir

from verl_lint.check import options_for
from verl_lint.cli import parser
from verl_lint.gpus import GIB, device_gib, gpu_gib, live_gpu_gib
from verl_lint.live import lint_config
from verl_lint.registry import main_ppo
from verl_lint.settings import Settings, load_settings

R = "actor_rollout_ref.rollout"
M = "actor_rollout_ref.model"
A = "actor_rollout_ref.actor"
# CONFIG's model: 1.54B parameters, 2.88 GiB of bf16 weights, 28 KiB of KV cache per token at TP 1,
# 4096 positions. On a 16 GiB GPU: util 0.17 leaves no room, 0.185 room for 3168 tokens, 0.2 for 12156.
SMALL = {"gpu_gib": 16.0, "gpu_origin": "--gpu-memory 16"}


def _rollout(path: str, util: float, *more: str, env=None) -> str:
    return main_ppo(
        f"{M}.path={path}", f"{R}.tensor_model_parallel_size=1", f"{R}.gpu_memory_utilization={util}", *more, env=env
    )


def test_local_directory_weights_and_kv_room(tmp_path, lint):
    d = _model_dir(tmp_path)
    no_room = lint(_rollout(d, 0.17), **SMALL)
    assert codes(no_room) == ["VL325"], [x.message for x in no_room.diagnostics]
    msg = no_room.diagnostics[0].message
    assert "2.9 GiB per TP rank" in msg and "0.17 x 16 GiB = 2.7 GiB" in msg and "assumes --gpu-memory 16" in msg
    # verl 0.9.1 gives vLLM the model's context (4096) as max_model_len: 3168 tokens of room are too few
    short = lint(_rollout(d, 0.185), **SMALL)
    assert codes(short) == ["VL326"], [x.message for x in short.diagnostics]
    assert "max_model_len 4096 (the model's max_position_embeddings (verl 0.7+))" in short.diagnostics[0].message
    assert "at most 3168 tokens" in short.diagnostics[0].help
    assert codes(lint(_rollout(d, 0.2), **SMALL)) == []
    # verl 0.5.0 gives it prompt + response: 1024 + 2048 fit in 3168 tokens
    assert (
        codes(lint(_rollout(d, 0.185, "data.max_prompt_length=1024", "data.max_response_length=2048"), OLDEST, **SMALL))
        == []
    )
    assert codes(
        lint(_rollout(d, 0.185, "data.max_prompt_length=1024", "data.max_response_length=3072"), OLDEST, **SMALL)
    ) == ["VL326"]
    # with vLLM 0.6.3, verl 0.5.0's own vLLM worker runs: its KV cache is a share of the memory left free
    old = lint(_rollout(d, 0.17), OLDEST, versions={"vllm": "0.6.3"}, **SMALL)
    assert codes(old) == [] and codes(lint(_rollout(d, 0.17), OLDEST, versions={"vllm": "0.8.5"}, **SMALL)) == ["VL325"]


def test_cached_hub_model_and_what_is_not_judged(tmp_path, lint):
    cache = _hub_cache(tmp_path / "hub", "acme/tiny-gqa")
    env = {"HF_HUB_CACHE": str(cache)}
    assert codes(lint(_rollout("acme/tiny-gqa", 0.17, env=env), **SMALL)) == ["VL325"]
    # Weights or cache vLLM would not hold as bf16 per TP rank: not vLLM's arithmetic, not judged.
    for more in (
        f"{R}.quantization=fp8",
        f"+{R}.engine_kwargs.vllm.kv_cache_dtype=fp8",
        f"+{R}.engine_kwargs.vllm.cpu_offload_gb=4",
    ):
        assert codes(lint(_rollout("acme/tiny-gqa", 0.17, more, env=env), **SMALL)) == [], more
    # SGLang sizes its memory its own way
    assert codes(lint(_rollout("acme/tiny-gqa", 0.17, f"{R}.name=sglang", env=env), **SMALL)) == []


def test_sliding_window_models_are_not_judged_on_kv(tmp_path, lint):
    d = _model_dir(tmp_path, {**CONFIG, "model_type": "gemma2", "sliding_window": 4096})
    assert codes(lint(_rollout(d, 0.185), **SMALL)) == []


def test_training_state_of_a_table_model(lint):
    big = f"{M}.path=Qwen/Qwen2.5-32B-Instruct"
    # 32.76B x 16 B / 4 ranks = 122 GiB on an 80 GiB GPU
    few = lint(main_ppo(big, "trainer.n_gpus_per_node=4", "algorithm.adv_estimator=grpo"))
    assert codes(few) == ["VL327"], [x.message for x in few.diagnostics]
    assert "at least 122.1 GiB per GPU" in few.diagnostics[0].message and "16 B/param" in few.diagnostics[0].message
    assert codes(lint(main_ppo(big, "trainer.n_gpus_per_node=8", "algorithm.adv_estimator=grpo"))) == []  # 61 GiB
    # GAE adds the critic's fp32 weights and Adam moments (12 B/param) while the actor updates
    assert codes(lint(main_ppo(big, "trainer.n_gpus_per_node=8", "algorithm.adv_estimator=gae"))) == ["VL327"]
    off = ("critic.model.fsdp_config.param_offload=True", "critic.model.fsdp_config.optimizer_offload=True")
    assert (
        codes(lint(main_ppo(big, "trainer.n_gpus_per_node=8", "algorithm.adv_estimator=gae", *off), OLDEST)) == []
    )  # keys of verl 0.5
    # LoRA freezes the base: 2 B/param (0.9.1 reads the rank at model.lora.rank too)
    assert (
        codes(lint(main_ppo(big, "trainer.n_gpus_per_node=4", "algorithm.adv_estimator=grpo", f"{M}.lora_rank=32")))
        == []
    )
    # a validation-only run never updates
    assert (
        codes(lint(main_ppo(big, "trainer.n_gpus_per_node=4", "algorithm.adv_estimator=grpo", "trainer.val_only=True")))
        == []
    )
    # GPUs known only at run time: silent
    assert "VL327" not in codes(lint(main_ppo(big, "trainer.n_gpus_per_node=$N", "algorithm.adv_estimator=grpo")))


@pytest.mark.slow
def test_without_a_gpu_silent_and_said_once_per_run(tmp_path, lint, verl_trees):
    d = _model_dir(tmp_path)
    assert codes(lint(_rollout(d, 0.17), gpu_gib=None)) == ["VL330"]
    assert codes(lint(_rollout("acme/unknown-model", 0.17), gpu_gib=None)) == [
        "VL329"
    ]  # no model: nothing about the GPU
    one = _rollout(d, 0.1)  # 1.6 GiB of 16, 2.4 GiB of 24: both below 2.9 GiB of weights
    (tmp_path / "a.sh").write_text(one + one.split("\n", 1)[1])
    (tmp_path / "b.sh").write_text(one)
    cmd = [
        sys.executable,
        "-m",
        "verl_lint",
        "check",
        "a.sh",
        "b.sh",
        "--output-format",
        "json",
        "--no-cache",
        "--verl-root",
        str(verl_trees[NEWEST].root),
    ]
    found = json_findings(subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True).stdout)
    assert [f["code"] for f in found] == ["VL330"], found
    # --gpu-memory, --gpu and the setting give it (flags first); the finding says which
    for flags, origin in ((["--gpu-memory", "16"], "--gpu-memory 16"), (["--gpu", "a10"], "--gpu a10")):
        options = options_for(parser("check").parse_args(["check", "b.sh", *flags]), Settings())
        assert options.gpu_origin == origin
        assert options.gpu_gib == {"--gpu-memory 16": 16.0, "--gpu a10": 24.0}[origin]
        found = json_findings(subprocess.run([*cmd, *flags], cwd=tmp_path, capture_output=True, text=True).stdout)
        assert [f["code"] for f in found] == ["VL325"] * 3 and origin in found[0]["message"], found
    (tmp_path / "verl-lint.toml").write_text('gpu = "A10"\n')
    found = json_findings(subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True).stdout)
    assert [f["code"] for f in found] == ["VL325"] * 3 and "the gpu setting (24 GiB)" in found[0]["message"], found
    options = options_for(parser("check").parse_args(["check", "b.sh"]), load_settings(tmp_path / "verl-lint.toml"))
    assert (options.gpu_gib, options.gpu_origin) == (24.0, "the gpu setting (24 GiB)")
    assert (
        options_for(
            parser("check").parse_args(["check", "b.sh", "--gpu", "h20"]), load_settings(tmp_path / "verl-lint.toml")
        ).gpu_gib
        == 96
    )
    bad = subprocess.run([*cmd, "--gpu", "Z80"], cwd=tmp_path, capture_output=True, text=True)
    assert bad.returncode == 2 and "--gpu 'Z80': not a GPU verl-lint knows" in bad.stderr


def test_gpu_names_and_settings(tmp_path):
    assert gpu_gib("h100") == 80 and gpu_gib("A100_40GB") == 40 and gpu_gib(96) == 96.0
    with pytest.raises(ValueError):
        gpu_gib(0)
    f = tmp_path / "verl-lint.toml"
    f.write_text("gpu = 141\n")
    assert load_settings(f).gpu == 141.0
    f.write_text('gpu = "B300x"\n')
    with pytest.raises(ValueError, match="gpu = \"B300x\": 'B300x': not a GPU verl-lint knows"):
        load_settings(f)


def test_live_device_total_in_the_callback_adapter(verl_trees, tmp_path):
    assert "torch" in sys.modules or live_gpu_gib() is None  # never imports torch itself
    d = _model_dir(tmp_path)
    overrides = [
        f"{M}.path={d}",
        f"{R}.tensor_model_parallel_size=1",
        f"{R}.gpu_memory_utilization=0.17",
        f"{R}.name=vllm",
    ]
    with initialize_config_dir(config_dir=str(config_dir(verl_trees[NEWEST])), version_base=None, job_name="lint_app"):
        cfg = compose("ppo_trainer", overrides=overrides, return_hydra_config=True)
    total = 16 * GIB  # what torch.cuda.get_device_properties(0).total_memory says of a 16 GiB device
    found = [
        x
        for x in lint_config(cfg, env={}, argv=["main_ppo.py", *overrides], gpu=(device_gib(total), "the live device"))
        if x.code.startswith("VL3")
    ]
    assert [x.code for x in found] == ["VL325"] and "the live device" in found[0].message
