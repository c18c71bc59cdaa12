"""The model a launch trains: facts from a local config.json, a Hugging Face cache laid out as
huggingface_hub lays it out, and the bundled table; the rules that judge sizes against them,
fired on each source and silent on a consistent launch, an unknown model and a model path only
known at run time; bad model inputs reported on one line with the rest of the launch linted."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import NEWEST, codes, json_findings

from verl_lint.knowledge import load_table
from verl_lint.models import MAX_CONFIG_BYTES, ModelFacts, ModelProblem, facts_from_config, resolve
from verl_lint.registry import main_ppo

R = "actor_rollout_ref.rollout"
M = "actor_rollout_ref.model"
# A config.json as the hub ships one for a small GQA model: 12 heads, 2 KV heads, 4096 positions.
CONFIG = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_size": 1536,
    "intermediate_size": 8960,
    "num_attention_heads": 12,
    "num_key_value_heads": 2,
    "num_hidden_layers": 28,
    "vocab_size": 151936,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
}


@pytest.mark.parametrize("record", load_table("models").models, ids=lambda r: r.id)
def test_each_table_record_computes_its_nominal_size(record):
    facts = facts_from_config(record.id, "table", record.config)
    assert abs(facts.params() / 1e9 / record.params - 1) < 0.03, (facts.params(), record.params)
    assert facts.heads % facts.kv_heads == 0 and facts.max_positions


def test_table_matches_hub_ids_and_directory_basenames():
    assert isinstance(resolve("Qwen/Qwen2.5-7B-Instruct", {}), ModelFacts)
    by_dir = resolve("/nonexistent/models/Qwen2.5-7B-Instruct", {})
    assert isinstance(by_dir, ModelFacts) and by_dir.heads == 28 and "model table" in by_dir.source
    assert resolve("/nonexistent/models/my-finetune", {}) is None
    assert resolve("my-org/my-private-model", {}) is None


def _model_dir(tmp_path, config=CONFIG, name="mymodel"):
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_text(json.dumps(config))
    return d


def _hub_cache(root, repo_id, config=CONFIG, commit="0123456789abcdef0123456789abcdef01234567"):
    """A Hugging Face hub cache as huggingface_hub lays it out: refs/main -> snapshots/<commit>."""
    repo = root / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    blob = repo / "blobs" / "deadbeef"
    blob.parent.mkdir()
    blob.write_text(json.dumps(config))
    snap = repo / "snapshots" / commit
    snap.mkdir(parents=True)
    (snap / "config.json").symlink_to(os.path.relpath(blob, snap))
    return root


def test_local_directory(tmp_path, lint):
    d = _model_dir(tmp_path)
    bad = lint(main_ppo(f"{M}.path={d}", f"{R}.tensor_model_parallel_size=8"))
    assert codes(bad) == ["VL320"], [d.message for d in bad.diagnostics]
    assert "12 attention heads" in bad.diagnostics[0].message and bad.diagnostics[0].span.line == 2
    assert codes(lint(main_ppo(f"{M}.path={d}", f"{R}.tensor_model_parallel_size=4"))) == []
    # 4 positions too few: the length rule reads the same file
    long = lint(main_ppo(f"{M}.path={d}", "data.max_prompt_length=1024", "data.max_response_length=4096"))
    assert codes(long) == ["VL322"] and "max_position_embeddings 4096" in long.diagnostics[0].message
    assert long.diagnostics[0].severity.name == "WARNING"  # 0.9.1: max_model_len becomes 4096, responses are cut
    old = lint(main_ppo(f"{M}.path={d}", "data.max_prompt_length=1024", "data.max_response_length=4096"), "0.5.0")
    assert (
        codes(old) == ["VL322"]
        and old.diagnostics[0].severity.name == "ERROR"
        and "verl asserts" in old.diagnostics[0].message
    )


def test_home_in_the_path_expands_as_the_shell_does(tmp_path, lint):
    _model_dir(tmp_path, name="m")
    script = f"#!/bin/bash\nexport HOME={tmp_path}\npython3 -m verl.trainer.main_ppo {R}.name=vllm {M}.path=$HOME/m {R}.tensor_model_parallel_size=8\n"
    assert codes(lint(script)) == ["VL320"]
    assert isinstance(resolve("~/m", {"HOME": str(tmp_path)}), ModelFacts)  # `~` that reaches verl unexpanded


def test_hugging_face_cache(tmp_path, lint):
    cache = _hub_cache(tmp_path / "hub", "acme/tiny-gqa")
    facts = resolve("acme/tiny-gqa", {"HF_HUB_CACHE": str(cache)})
    assert isinstance(facts, ModelFacts) and facts.kv_heads == 2 and "revision 0123456789ab" in facts.source
    assert resolve("acme/tiny-gqa", {"HF_HOME": str(tmp_path)}) == facts  # the same facts
    script = main_ppo(f"{M}.path=acme/tiny-gqa", f"{R}.tensor_model_parallel_size=8", env={"HF_HUB_CACHE": str(cache)})
    assert codes(lint(script)) == ["VL320"]
    ok = main_ppo(f"{M}.path=acme/tiny-gqa", f"{R}.tensor_model_parallel_size=2", env={"HF_HUB_CACHE": str(cache)})
    assert codes(lint(ok)) == []


def test_table_model_and_ulysses(lint):
    """Both spellings of the actor's SP: the one 0.9.1 deprecates (VL232 too) and its fsdp_config one."""
    for key, expected in (
        ("ulysses_sequence_parallel_size", ["VL232", "VL321"]),
        ("fsdp_config.ulysses_sequence_parallel_size", ["VL321"]),
    ):
        bad = lint(
            main_ppo(
                f"{M}.path=Qwen/Qwen2.5-7B-Instruct", f"actor_rollout_ref.actor.{key}=8", f"{M}.use_remove_padding=True"
            )
        )
        assert sorted(codes(bad)) == expected, bad.diagnostics
        assert f"actor {key}=8 does not divide the 28 attention heads" in next(
            d.message for d in bad.diagnostics if d.code == "VL321"
        )


def test_unknown_model_is_said_once_per_run_and_nothing_is_guessed(tmp_path, verl_trees):
    one = main_ppo(f"{M}.path=acme/secret", f"{R}.tensor_model_parallel_size=8")
    (tmp_path / "a.sh").write_text(one + one.split("\n", 1)[1])  # two launches of the same unknown model
    (tmp_path / "b.sh").write_text(main_ppo(f"{M}.path=acme/other", f"{R}.tensor_model_parallel_size=8"))
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
    p = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    found = json_findings(p.stdout)
    assert [f["code"] for f in found] == ["VL329"], found
    assert "acme/secret" in found[0]["help"] and "VL320" in found[0]["message"]


def test_model_path_known_only_at_run_time_is_silent(lint):
    script = f"#!/bin/bash\npython3 -m verl.trainer.main_ppo {R}.name=vllm {M}.path=$MODEL_PATH {R}.tensor_model_parallel_size=8\n"
    assert [c for c in codes(lint(script)) if c != "VL011"] == []  # VL011: $MODEL_PATH is assigned nowhere


@pytest.mark.parametrize("kind", ["malformed", "file", "loop", "huge", "no-heads"])
def test_bad_model_input_is_one_line_and_the_launch_is_still_linted(tmp_path, lint, kind):
    d = tmp_path / "model"
    if kind == "file":
        d.write_text("not a directory")
    elif kind == "loop":
        d.symlink_to(tmp_path / "loop2")
        (tmp_path / "loop2").symlink_to(d)
    else:
        d.mkdir()
        text = {
            "malformed": "{not json",
            "huge": " " * (MAX_CONFIG_BYTES + 1),
            "no-heads": json.dumps({"model_type": "x"}),
        }[kind]
        (d / "config.json").write_text(text)
    got = resolve(str(d), {})
    assert isinstance(got, ModelProblem) and "\n" not in got.message
    # TP 3 does not divide the 8 GPUs either: that finding is still there.
    report = lint(main_ppo(f"{M}.path={d}", f"{R}.tensor_model_parallel_size=3"))
    assert sorted(codes(report)) == ["VL306", "VL328"], [x.message for x in report.diagnostics]


def test_config_shows_the_facts_and_the_memory_breakdown(tmp_path, verl_trees):
    (tmp_path / "run.sh").write_text(
        main_ppo(
            f"{M}.path=Qwen/Qwen2.5-7B-Instruct", f"{R}.tensor_model_parallel_size=2", f"{R}.gpu_memory_utilization=0.6"
        )
    )
    cmd = [
        sys.executable,
        "-m",
        "verl_lint",
        "config",
        "run.sh",
        "--key",
        "trainer.nnodes",
        "--verl-root",
        str(verl_trees[NEWEST].root),
    ]
    p = subprocess.run([*cmd, "--memory", "--gpu-memory", "80"], cwd=tmp_path, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "# model: Qwen/Qwen2.5-7B-Instruct: qwen2, 7.62B parameters, dense" in p.stdout
    assert (
        "28 attention heads, 4 KV heads, head dim 128, 28 layers" in p.stdout
        and "from verl-lint's model table" in p.stdout
    )
    # vLLM's KV cache per token at TP 2: 2 x 28 layers x 2 KV heads x 128 x 2 B = 28 KiB
    assert "7.09 GiB  TP = 2" in p.stdout and "28.0 KiB per token" in p.stdout and "48.00 GiB  0.6 x 80 GiB" in p.stdout
    assert subprocess.run([*cmd, "--memory"], cwd=tmp_path, capture_output=True, text=True).returncode == 2
    same = subprocess.run([*cmd, "--memory", "--gpu", "h100"], cwd=tmp_path, capture_output=True, text=True)
    assert same.stdout == p.stdout


def test_vl300_names_the_model_checks_only_when_the_model_is_known(lint):
    def vl300(model: str) -> str:
        script = f"#!/bin/bash\npython3 -m verl.trainer.main_ppo {R}.name=vllm {M}.path={model} {R}.tensor_model_parallel_size=$TP\n"
        return " ".join(d.message for d in lint(script).diagnostics if d.code == "VL300")

    assert "VL320" in vl300("Qwen/Qwen2.5-7B-Instruct")
    assert "VL306" in vl300("acme/secret") and "VL320" not in vl300("acme/secret")
