"""6xx allocator rules: the config parser (checked against the real torch parser when torch is
installed), the option table per torch / torch-npu version, and the rules' version paths."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from conftest import NEWEST, RELEASES, codes
from golden import run_fixture
from packaging.version import Version

import verl_lint.pipeline as pipeline
from verl_lint.allocator import alloc_conf as S
from verl_lint.allocator.host import RUNTIME_SPAN, inspect_torch
from verl_lint.environment import package_dir
from verl_lint.knowledge import load_table
from verl_lint.model import EnvVar
from verl_lint.registry import REGISTRY, main_ppo, parse_version
from verl_lint.rules.allocator_checks import AllocInput, check_conf

VLLM = "actor_rollout_ref.rollout.name=vllm"
SGLANG = "actor_rollout_ref.rollout.name=sglang"


# ------------------------------------------------------------- parser ----


def test_tokenize_like_c10():
    assert S.tokenize(" expandable_segments : True ,x:[1, 2]") == [
        "expandable_segments",
        ":",
        "True",
        ",",
        "x",
        ":",
        "[",
        "1",
        ",",
        "2",
        "]",
    ]
    assert S.tokenize("expandable_segments=True") == ["expandable_segments=True"]


# (string, accepted by torch 2.13.0's AcceleratorAllocatorConfig::parseArgs). Observed with the
# CPU build via torch._C._accelerator_setAllocatorSettings; `test_corpus_matches_real_torch`
# re-checks every row against the installed torch.
CORPUS = [
    ("expandable_segments:True", True),
    ("expandable_segments: True", True),
    ("expandable_segments:True,", True),
    (",expandable_segments:True", True),
    ("expandable_segments:True,,max_split_size_mb:100", True),
    ("expandable_segments:True]", True),
    ("expandable_segments:False,max_split_size_mb:512,garbage_collection_threshold:0.6", True),
    ("expandable_segments", False),
    ("expandable_segments:", False),
    ("expandable_segments:true", False),
    ("expandable_segments=True", False),
    ("expandable_segments:True:False", False),
    ("expandable_segments:[True]", False),
    ("pinned_use_background_threads:true", False),
    ("max_split_size_mb:10", False),
    ("max_split_size_mb:20", True),
    ("max_split_size_mb:abc", False),
    ("max_non_split_rounding_mb:10", False),
    ("garbage_collection_threshold:1.0", False),
    ("garbage_collection_threshold:0", False),
    ("garbage_collection_threshold:0.8", True),
    ("roundup_power2_divisions:3", False),
    ("roundup_power2_divisions:0", False),
    ("roundup_power2_divisions:1", True),
    ("roundup_power2_divisions:[256:1,512:2,>:8]", True),
    ("roundup_power2_divisions:[256:3]", False),
    ("roundup_power2_divisions:[300:2]", False),
    ("roundup_power2_divisions:[256:0]", True),
    ("roundup_power2_divisions:[1,2]", True),
    ("roundup_power2_divisions:[256:1", False),
    ("large_segment_size_mb:1", False),
    ("large_segment_size_mb:64", True),
]


def lint_verdict(text: str, torch_version: str = "2.13.0") -> bool:
    """Does the linter accept `text` for torch `torch_version` (PYTORCH_ALLOC_CONF on CUDA)?"""
    inp = AllocInput(
        {"PYTORCH_ALLOC_CONF": EnvVar("PYTORCH_ALLOC_CONF", text, RUNTIME_SPAN)},
        {"torch": Version(torch_version)},
        "cuda",
        None,
        None,
        None,
    )
    return not [f for f in check_conf(inp) if f.code in ("VL601", "VL602", "VL603")]


@pytest.mark.parametrize("text,accepted", CORPUS, ids=[c[0] for c in CORPUS])
def test_parser_verdicts(text, accepted):
    assert lint_verdict(text) is accepted


@pytest.mark.slow
def test_corpus_matches_real_torch():
    """The same strings through the installed torch's own parser (a subprocess; CPU is enough)."""
    if package_dir("torch") is None:
        pytest.skip("torch is not installed")
    prog = (
        "import json, sys, warnings\n"
        "warnings.simplefilter('ignore')\n"
        "import torch\n"
        "setter = getattr(torch._C, '_accelerator_setAllocatorSettings', None)\n"
        "if setter is None: print(json.dumps(None)); sys.exit()\n"
        "out = {}\n"
        "for s in json.loads(sys.stdin.read()):\n"
        "    try:\n"
        "        setter(s); out[s] = True\n"
        "    except Exception as ex:\n"
        "        out[s] = False\n"
        "print(json.dumps({'version': torch.__version__, 'verdicts': out}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", prog],
        input=json.dumps([c[0] for c in CORPUS]),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if result is None:
        pytest.skip("the installed torch has no _accelerator_setAllocatorSettings (torch < 2.10)")
    version = Version(result["version"])
    if S.norm(version) < Version("2.13"):
        pytest.skip(f"corpus recorded for torch >= 2.13, installed {version}")
    for text, real in result["verdicts"].items():
        assert lint_verdict(text, result["version"]) is real, (
            f"{text!r}: torch {version} says {'ok' if real else 'error'}"
        )


# -------------------------------------------------------------- table ----


def test_table_loads_from_rules_folder():
    t = load_table("allocator_options.yaml")
    assert load_table("allocator_options") is t
    assert t.cuda and t.npu and t.env_vars and t.reset_on_parse
    for alloc in ("cuda", "npu"):
        for opt in S.options(alloc).values():
            assert opt.type in {
                "bool",
                "int",
                "mb",
                "fraction",
                "float",
                "backend",
                "roundup",
                "pow2_le_128",
                "page_size",
                "range",
                "any",
            }


@pytest.mark.parametrize(
    "alloc,key,version,accepted",
    [
        ("cuda", "expandable_segments", "2.5.1", True),
        ("cuda", "max_non_split_rounding_mb", "2.5.1", False),
        ("cuda", "max_non_split_rounding_mb", "2.6.0", True),
        ("cuda", "graph_capture_record_stream_reuse", "2.8.0", False),
        ("cuda", "graph_capture_record_stream_reuse", "2.9.1", True),
        ("cuda", "per_process_memory_fraction", "2.9.1", False),
        ("cuda", "per_process_memory_fraction", "2.10.0", True),
        ("cuda", "pinned_max_cached_size_mb", "2.12.0", False),
        ("cuda", "pinned_max_cached_size_mb", "2.13.0+cpu", True),
        ("cuda", "pinned_max_cached_size_mb", "2.13.0a0+git1234", True),  # NGC-style build
        ("npu", "segment_size_mb", "2.6.0", False),
        ("npu", "segment_size_mb", "2.6.0.post3", False),
        ("npu", "segment_size_mb", "2.6.0.post5", True),
        ("npu", "segment_size_mb", "2.7.1", False),
        ("npu", "segment_size_mb", "2.7.1.post2", True),
        ("npu", "segment_size_mb", "2.8.0", False),
        ("npu", "segment_size_mb", "2.9.0", True),
        ("npu", "segment_size_mb", "2.12.0", True),
        ("npu", "max_non_split_rounding_mb", "2.12.0", False),
        ("npu", "max_non_split_rounding_mb", "2.13.0", True),
        ("npu", "page_size", "2.6.0", True),
    ],
)
def test_option_versions(alloc, key, version, accepted):
    assert S.options(alloc)[key].accepted_by(Version(version)) is accepted


def test_npu_setter_by_version():
    assert S.npu_has_setter_by_version(Version("2.6.0")) is False
    assert S.npu_has_setter_by_version(Version("2.6.0.post5")) is True
    assert S.npu_has_setter_by_version(Version("2.7.1")) is False
    assert S.npu_has_setter_by_version(Version("2.8.0.post2")) is True
    assert S.npu_has_setter_by_version(Version("2.10.0")) is True
    assert S.npu_has_setter_by_version(None) is None


def test_table_matches_installed_torch():
    """Every CUDA key the installed torch's headers list is in the table for that version, and
    every option the table gives that version is named in its headers or libc10."""
    torch_dir = package_dir("torch")
    if torch_dir is None:
        pytest.skip("torch is not installed")
    cuda_h = torch_dir / "include" / "c10" / "cuda" / "CUDAAllocatorConfig.h"
    if not cuda_h.is_file():
        pytest.skip("the installed torch ships no c10 headers")
    version = Version(inspect_torch().version)
    text = cuda_h.read_text()
    m = re.search(r"getKeys\(\)\s*\{.*?keys\{(.*?)\};", text, re.S)
    if m:  # torch >= 2.10: the CUDA-specific keys, written as adjacent string literals
        body = re.sub(r"//[^\n]*", "", m.group(1))
        header_keys = {re.sub(r'"\s*"', "", k).strip('"') for k in re.findall(r'"[^"]*"(?:\s*"[^"]*")*', body)}
        for k in header_keys:
            assert k in S.options("cuda") and S.options("cuda")[k].accepted_by(version), k
    blobs = text + (torch_dir / "include" / "c10" / "core" / "AllocatorConfig.h").read_text()
    libs = sorted((torch_dir / "lib").glob("libc10.*"))
    binary = libs[0].read_bytes() if libs else b""
    for key, opt in S.options("cuda").items():
        if opt.accepted_by(version) and key not in ("release_lock_on_hipmalloc", "pinned_use_hip_host_register"):
            assert key in blobs or key.encode() in binary or key.replace("cuda", "cud") in blobs, key


# -------------------------------------------------------------- rules ----


def c6(report) -> list[str]:
    """The 6xx codes of a report (other rule families are not under test here)."""
    assert not report.errors, report.errors
    return [c for c in codes(report) if c.startswith("VL6")]


def d6(report) -> list:
    return [d for d in report.diagnostics if d.code.startswith("VL6")]


def _msgs(report, code):
    return [d.message for d in report.diagnostics if d.code == code]


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="VL608's bad example gives nothing on verl 0.5.0 (issue #19)")
def test_examples_do_not_depend_on_installed_torch(verl_trees, monkeypatch):
    """Every 6xx example fixture gives the same codes with no torch installed, torch 2.9.1 and torch 2.13."""
    for installed in ({}, {"torch": "2.9.1"}, {"torch": "2.13.0+cpu"}):
        monkeypatch.setattr(pipeline, "installed_versions", lambda installed=installed: dict(installed))
        for r in REGISTRY:
            if not r.code.startswith("VL6"):
                continue
            for v in RELEASES:
                verl_trees[v]  # in the test download cache (else the test skips, naming how to get it)
                for kind in ("bad", "good"):
                    for ex in r.examples(kind, parse_version(v)):
                        _, _, found, _ = run_fixture(ex, v, "--no-cache")
                        got = sorted({f["code"] for f in found if f["code"].startswith("VL6")})
                        assert got == ([r.code] if kind == "bad" else []), (ex.name, v, installed, got)


def test_unknown_option_did_you_mean(lint):
    rep = lint(main_ppo(env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segment:True"}))
    [d] = d6(rep)
    assert d.code == "VL601" and "did you mean `expandable_segments`" in d.help
    assert d.span.line == 2 and d.key == "PYTORCH_CUDA_ALLOC_CONF"


def test_option_too_new_for_installed_torch(lint):
    script = main_ppo(env={"PYTORCH_CUDA_ALLOC_CONF": "pinned_free_catch_all:True"})
    msgs = _msgs(lint(script, versions={"torch": "2.9.1"}), "VL601")
    assert msgs and "torch 2.9.1" in msgs[0] and "2.12" in msgs[0]
    assert c6(lint(script, versions={"torch": "2.13.0"})) == []


def test_max_split_minimum_depends_on_torch(lint):
    script = main_ppo(env={"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:20"})
    assert "VL602" in c6(lint(script, versions={"torch": "2.9.1"}))  # > 20 before 2.10
    assert "VL602" not in c6(lint(script, versions={"torch": "2.13.0"}))  # >= 20 from 2.10


def test_alloc_conf_ignored_by_torch_29(lint, monkeypatch):
    monkeypatch.setattr(pipeline, "installed_versions", lambda: {})
    script = main_ppo(env={"PYTORCH_ALLOC_CONF": "expandable_segments:True"})
    msgs = _msgs(lint(script, versions={"torch": "2.9.1"}), "VL604")
    assert msgs and "torch 2.9.1" in msgs[0]
    assert "torch <= 2.9" in _msgs(lint(script), "VL604")[0]  # unknown torch: the range, not a guess
    assert _msgs(lint(script, versions={"torch": "2.10.0"}), "VL604") == []


def test_alloc_conf_ignored_on_old_torch_npu(lint, monkeypatch):
    monkeypatch.setattr(pipeline, "installed_versions", lambda: {})
    script = main_ppo("trainer.device=npu", env={"PYTORCH_ALLOC_CONF": "expandable_segments:False"})
    assert "torch-npu < 2.13" in _msgs(lint(script), "VL604")[0]
    assert c6(lint(script, versions={"torch_npu": "2.13.0"})) == []


def test_npu_both_vars_only_on_new_torch_npu(lint):
    script = main_ppo(
        env={"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:False", "PYTORCH_ALLOC_CONF": "expandable_segments:False"}
    )
    assert "torch-npu 2.13.0" in _msgs(lint(script, versions={"torch_npu": "2.13.0"}), "VL605")[0]
    assert "VL605" not in c6(lint(script, versions={"torch_npu": "2.12.0"}))


@pytest.mark.parametrize(
    "vllm,expect",
    [(None, "VL607"), ("0.8.0", "VL607"), ("0.20.0", "VL607"), ("0.7.3", "VL609"), ("0.20.1", None), ("0.33.0", None)],
)
def test_vllm_sleep_mode_by_version(lint, monkeypatch, vllm, expect):
    monkeypatch.setattr(pipeline, "installed_versions", lambda: {})
    script = main_ppo(VLLM, env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
    # verl 0.7.1 declares a vLLM range, not one release: the version is unknown
    rep = lint(script, "0.7.1", versions={"vllm": vllm} if vllm else {})
    assert c6(rep) == ([expect] if expect else [])
    if vllm is None:
        assert "vLLM 0.8.0-0.20.0" in d6(rep)[0].message
    elif expect == "VL607":
        assert f"vLLM {vllm}" in d6(rep)[0].message


def test_vllm_sleep_mode_off_via_engine_kwargs(lint):
    script = main_ppo(
        VLLM,
        "++actor_rollout_ref.rollout.engine_kwargs.vllm.enable_sleep_mode=false",
        env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
    )
    assert c6(lint(script)) == []


def test_vllm_sleep_mode_uses_the_vllm_the_verl_tree_pins(lint, monkeypatch):
    """verl 0.9.1 pins vllm==0.24.0 (its wheel METADATA), where CuMemAllocator no longer asserts."""
    monkeypatch.setattr(pipeline, "installed_versions", lambda: {})
    script = main_ppo(VLLM, env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
    assert c6(lint(script, "0.9.1")) == []
    assert c6(lint(script, "0.9.1", versions={"vllm": "0.12.0"})) == ["VL607"]  # the flag wins


def test_ray_runtime_env_override_is_checked(lint):
    script = main_ppo(
        VLLM, "+ray_kwargs.ray_init.runtime_env.env_vars.PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
    )
    rep = lint(script, versions={"vllm": "0.12.0"})
    [d] = d6(rep)
    assert d.code == "VL607" and d.span.col > 40  # points at the override, not the launch


def test_command_prefix_is_checked(lint):
    rep = lint("#!/bin/bash\nPYTORCH_CUDA_ALLOC_CONF=expandable_segments:true python3 -m verl.trainer.main_ppo\n")
    assert c6(rep) == ["VL602"] and d6(rep)[0].span.line == 2


def test_vllm_ascend_npu_var(lint, monkeypatch):
    monkeypatch.setattr(pipeline, "installed_versions", lambda: {})
    script = main_ppo(VLLM, "trainer.device=npu", env={"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True"})
    assert "vllm-ascend >= 0.10.0rc1" in _msgs(lint(script), "VL607")[0]
    assert "VL607" not in c6(lint(script, versions={"vllm_ascend": "0.9.1"}))


@pytest.mark.parametrize(
    "tms,sglang,expect",
    [(None, None, "VL608"), ("0.0.9", None, "VL608"), ("0.0.8", None, "VL609"), (None, "0.5.10", "VL608")],
)
def test_sglang_memory_saver_by_version(lint, monkeypatch, tms, sglang, expect):
    monkeypatch.setattr(pipeline, "installed_versions", lambda: {})
    versions = {k: v for k, v in (("torch_memory_saver", tms), ("sglang", sglang)) if v}
    rep = lint(main_ppo(SGLANG, env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}), versions=versions)
    assert c6(rep) == [expect]


def test_alloc_conf_hidden_from_vllm_on_new_torch(lint):
    script = main_ppo(VLLM, env={"PYTORCH_ALLOC_CONF": "expandable_segments:True"})
    rep = lint(script, versions={"torch": "2.10.0", "vllm": "0.17.0"})
    assert c6(rep) == ["VL609"] and "PYTORCH_ALLOC_CONF" in d6(rep)[0].message
    assert c6(lint(script, versions={"torch": "2.10.0", "vllm": "0.31.0"})) == []


@pytest.mark.xfail(strict=True, reason="VL610 gives nothing on verl 0.5.0 (issue #19)")
def test_reset_info_names_verl_code(lint):
    for v in RELEASES:
        rep = lint(
            main_ppo(env={"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:512,garbage_collection_threshold:0.6"}), v
        )
        [d] = d6(rep)
        assert d.code == "VL610" and "verl/utils/device.py" in d.message
        assert "max_split_size_mb, garbage_collection_threshold" in d.message


def test_reset_info_on_npu_follows_verl_code(lint):
    script = main_ppo("trainer.device=npu", env={"PYTORCH_NPU_ALLOC_CONF": "max_split_size_mb:512"})
    # 0.9.1 toggles the NPU allocator (platform_npu.py); 0.7.1's helper is CUDA-only.
    assert c6(lint(script, NEWEST)) == ["VL610"]
    assert c6(lint(script, "0.7.1")) == []
    # torch-npu without the setter: verl's toggle is a no-op, nothing is reset.
    assert c6(lint(script, NEWEST, versions={"torch_npu": "2.7.1"})) == []


def test_unknown_values_are_not_guessed(lint):
    script = "#!/bin/bash\nexport PYTORCH_CUDA_ALLOC_CONF=$(cat alloc.conf)\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm\n"
    assert c6(lint(script)) == []
    both = "#!/bin/bash\nexport PYTORCH_CUDA_ALLOC_CONF=$(cat alloc.conf)\nexport PYTORCH_ALLOC_CONF=expandable_segments:True\npython3 -m verl.trainer.main_ppo\n"
    rep = lint(both)
    assert c6(rep) == ["VL604"] and d6(rep)[0].span.line == 3  # set, even if its value is unknown
