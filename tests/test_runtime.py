"""The live allocator check: verl's allocator code read with ast (real releases and a synthetic
tree), torch-npu's setter read from real wheels (never imported), the accelerator probe, the
live check with the real torch CPU build, and `verl-lint doctor`."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import zipfile
from pathlib import Path

import pytest

from verl_lint import doctor
from verl_lint.allocator.host import Accelerator, detect_accelerator, inspect_runtime, inspect_torch_npu
from verl_lint.allocator.verl_code import analyze_verl, rollout_config_default
from verl_lint.cache import cache_dir
from verl_lint.gpus import probe_device
from verl_lint.launch.locate import tree_at
from verl_lint.registry import REGISTRY
from verl_lint.rules.allocator_live import check_allocator, rollout_settings

# One torch-npu release before `_set_allocator_settings` existed and the first one after it on
# the same line (runtime-facts.md §2.3; both ~25-30 MB wheels).
NPU_BEFORE, NPU_AFTER = "2.6.0", "2.6.0.post5"
ALLOC_VARS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF", "PYTORCH_NPU_ALLOC_CONF")
KEEP = ("torch_npu/npu/memory.py", "torch_npu/version.py")


def _unpacked_torch_npu(version: str) -> Path:
    """`torch_npu/` of the real wheel (pip download --no-deps), only the files the check reads, cached."""
    dest = cache_dir() / "wheels" / f"torch_npu-{version}"
    if (dest / "torch_npu" / "npu" / "memory.py").is_file():
        return dest / "torch_npu"
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", f"torch-npu=={version}", "--no-deps", "--only-binary=:all:",
               "--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_28_x86_64", "--python-version", "3.11",
               "-d", tmp, "-q"]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        wheels = sorted(Path(tmp).glob("torch_npu-*.whl"))
        if proc.returncode != 0 or not wheels:
            pytest.skip(
                f"cannot download torch-npu=={version}: {(proc.stderr.strip().splitlines() or ['no wheel'])[-1]}"
            )
        unpack = Path(tmp) / "unpacked"
        with zipfile.ZipFile(wheels[0]) as zf:
            for name in zf.namelist():
                if name in KEEP or (".dist-info/" in name and name.endswith("/METADATA")):
                    zf.extract(name, unpack)
        if not dest.exists():
            os.replace(unpack, dest)
    return dest / "torch_npu"


@pytest.fixture(scope="session")
def torch_npu_pkgs():
    return {v: _unpacked_torch_npu(v) for v in (NPU_BEFORE, NPU_AFTER)}


@pytest.fixture
def clean_env(monkeypatch):
    for var in ALLOC_VARS:
        monkeypatch.delenv(var, raising=False)


# ---------------------------------------------------- verl's source (ast) ----


def test_verl_091_allocator_code(verl_trees):
    v = analyze_verl(str(verl_trees["0.9.1"].root))
    assert v.helper == "verl/utils/device.py:137"
    cuda, npu = v.setter_for("cuda"), v.setter_for("npu")
    assert cuda.api == "torch.cuda.memory._set_allocator_settings"
    assert cuda.where == "verl/plugin/platform/platform_cuda.py:99" and not cuda.swallows_errors
    assert npu.api == "torch.npu.memory._set_allocator_settings"
    assert npu.where == "verl/plugin/platform/platform_npu.py:102" and npu.swallows_errors  # only logs a warning
    assert npu.via == "PlatformNPU.set_allocator_settings"
    calls = {(c.where, c.enable, c.side) for c in v.calls}
    assert ("verl/workers/engine_workers.py:768", False, "trainer") in calls
    assert ("verl/workers/engine_workers.py:827", True, "trainer") in calls
    assert ("verl/workers/rollout/vllm_rollout/vllm_async_server.py:303", True, "rollout") in calls
    server = next(c for c in v.calls if c.side == "rollout")
    assert server.conditions == ("not self.config.enable_sleep_mode",)
    assert not [c for c in v.calls if c.cls == "TrainingWorker"]  # TrainingWorker itself never toggles
    assert {c.cls for c in v.trainer_enables} == {"ActorRolloutRefWorker"}
    assert v.enables_training_on("cuda") and v.enables_training_on("npu")


def test_verl_071_allocator_code(verl_trees):
    v = analyze_verl(str(verl_trees["0.7.1"].root))
    assert v.helper == "verl/utils/device.py:132"
    assert v.platforms == ("cuda",)  # `if is_cuda_available:` only
    assert v.setter_for("cuda").where == "verl/utils/device.py:146"
    assert v.setter_for("npu") is None
    files = {c.path for c in v.trainer_enables}
    assert {
        "verl/workers/fsdp_workers.py",
        "verl/workers/megatron_workers.py",
        "verl/workers/engine_workers.py",
    } <= files
    assert v.enables_training_on("cuda") and not v.enables_training_on("npu")


DEVICE_PY = """
import logging
import torch
logger = logging.getLogger(__name__)
is_cuda_available = torch.cuda.is_available()
is_npu_available = False


def set_expandable_segments(enable: bool) -> None:
    if is_cuda_available:
        torch.cuda.memory._set_allocator_settings(f"expandable_segments:{enable}")
    elif is_npu_available:
        try:
            torch.npu.memory._set_allocator_settings(f"expandable_segments:{enable}")
        except Exception:
            logger.warning("torch-npu does not support _set_allocator_settings")
"""

WORKERS_PY = """
from verl.utils.device import set_expandable_segments


class TrainingWorker:
    def train_batch(self, data):
        {training_call}
        return data


class ActorRolloutRefWorker:
    async def update_weights(self):
        set_expandable_segments(False)
        await self.rollout.resume(tags=["weights"])
"""


def _synthetic_tree(root: Path, training_call: str) -> Path:
    (root / "verl" / "utils").mkdir(parents=True)
    (root / "verl" / "workers").mkdir(parents=True)
    (root / "verl" / "trainer").mkdir(parents=True)
    (root / "verl" / "__init__.py").write_text("")
    (root / "verl" / "utils" / "device.py").write_text(DEVICE_PY)
    (root / "verl" / "workers" / "engine_workers.py").write_text(
        textwrap.dedent(WORKERS_PY).replace("{training_call}", training_call)
    )
    return root


def test_synthetic_tree_training_worker_lacks_call(tmp_path, torch_npu_pkgs, clean_env):
    tree = tree_at(_synthetic_tree(tmp_path / "lacks", "pass"), "test")
    v = analyze_verl(str(tree.root))
    assert v.setter_for("npu").swallows_errors and v.setter_for("cuda") is not None
    assert v.trainer_enables == ()
    assert not v.enables_training_on("npu")
    diags = check_allocator(
        None, accelerator="npu", verl_tree=tree, torch_npu_dir=torch_npu_pkgs[NPU_AFTER], environ={}
    )
    [d] = diags
    assert d.code == "VL652" and d.span.path == "<runtime>" and (d.span.line, d.span.col) == (1, 1)
    assert "never enables expandable segments for training on NPU" in d.message
    assert "TrainingWorker" in d.message and "PYTORCH_NPU_ALLOC_CONF=expandable_segments:True" in d.help
    # The env already turns them on: nothing to report.
    env = {"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True"}
    assert (
        check_allocator(None, accelerator="npu", verl_tree=tree, torch_npu_dir=torch_npu_pkgs[NPU_AFTER], environ=env)
        == []
    )
    # With the call in TrainingWorker verl does enable them.
    tree2 = tree_at(_synthetic_tree(tmp_path / "has", "set_expandable_segments(True)"), "test")
    v2 = analyze_verl(str(tree2.root))
    assert [(c.cls, c.func, c.enable) for c in v2.trainer_enables] == [("TrainingWorker", "train_batch", True)]
    assert (
        check_allocator(None, accelerator="npu", verl_tree=tree2, torch_npu_dir=torch_npu_pkgs[NPU_AFTER], environ={})
        == []
    )


def test_rollout_config_default_from_source(verl_trees):
    for v in ("0.9.1", "0.7.1"):
        assert rollout_config_default(str(verl_trees[v].root), "enable_sleep_mode") is True
        assert rollout_config_default(str(verl_trees[v].root), "no_such_field") is ...


# ------------------------------------------------ torch-npu (real wheels) ----


def test_torch_npu_setter_from_real_wheels(torch_npu_pkgs):
    before, after = inspect_torch_npu(torch_npu_pkgs[NPU_BEFORE]), inspect_torch_npu(torch_npu_pkgs[NPU_AFTER])
    assert before.version == NPU_BEFORE and before.has_setter is False and before.setter_line is None
    assert after.version == NPU_AFTER and after.has_setter is True and after.setter_line == 589
    assert "torch_npu" not in sys.modules  # read, never imported


def test_old_torch_npu_warns_on_npu(verl_trees, torch_npu_pkgs, clean_env):
    kw = dict(accelerator="npu", verl_tree=verl_trees["0.9.1"], environ={})
    [d] = check_allocator(None, torch_npu_dir=torch_npu_pkgs[NPU_BEFORE], **kw)
    assert d.code == "VL651"
    assert d.message.startswith(
        "expandable segments will not be enabled on this NPU: torch-npu 2.6.0 lacks _set_allocator_settings"
    )
    assert "only logs a warning (verl/plugin/platform/platform_npu.py:102)" in d.message
    assert "PYTORCH_NPU_ALLOC_CONF=expandable_segments:True" in d.help and "upgrade" in d.help
    assert check_allocator(None, torch_npu_dir=torch_npu_pkgs[NPU_AFTER], **kw) == []
    # Not on an NPU host: the torch-npu API does not matter.
    assert (
        check_allocator(
            None,
            accelerator="cuda",
            verl_tree=verl_trees["0.9.1"],
            torch_npu_dir=torch_npu_pkgs[NPU_BEFORE],
            environ={},
        )
        == []
    )


def test_verl_without_npu_path_on_npu(verl_trees, torch_npu_pkgs):
    [d] = check_allocator(
        None, accelerator="npu", verl_tree=verl_trees["0.7.1"], torch_npu_dir=torch_npu_pkgs[NPU_AFTER], environ={}
    )
    assert d.code == "VL652" and "(0.7.1)" in d.message and "no NPU path" in d.message
    assert "vllm-ascend sleep mode" in d.help  # rollout unknown: the env fix has a caveat
    [d] = check_allocator(
        {"name": "sglang"},
        accelerator="npu",
        verl_tree=verl_trees["0.7.1"],
        torch_npu_dir=torch_npu_pkgs[NPU_AFTER],
        environ={},
    )
    assert "vllm-ascend" not in d.help


# ------------------------------------------------------------ live env ----


def test_live_env_rules_use_runtime_span(verl_trees):
    diags = check_allocator(
        None,
        accelerator="cuda",
        verl_tree=verl_trees["0.9.1"],
        environ={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:true"},
    )
    assert [d.code for d in diags] == ["VL602"]
    assert diags[0].span.path == "<runtime>" and diags[0].span.line == 1


def test_live_rollout_config_forms(verl_trees):
    from omegaconf import OmegaConf

    env = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    kw = dict(accelerator="cuda", verl_tree=verl_trees["0.9.1"], environ=env, versions={"vllm": None})
    full = OmegaConf.create({"actor_rollout_ref": {"rollout": {"name": "vllm", "free_cache_engine": True}}})
    assert [d.code for d in check_allocator(full, **kw)] == ["VL607"]
    assert [d.code for d in check_allocator({"name": "vllm"}, **kw)] == ["VL607"]
    off = OmegaConf.create({"name": "vllm", "enable_sleep_mode": False})
    assert check_allocator(off, **kw) == []
    assert check_allocator(None, **kw) == []  # rollout unknown: no sleep-mode finding
    missing = OmegaConf.create({"name": "???"})
    assert rollout_settings(missing) == {}


@pytest.mark.slow
def test_live_check_with_real_torch(clean_env, verl_trees):
    torch = pytest.importorskip("torch")
    report = inspect_runtime(verl_tree=verl_trees["0.9.1"])
    if torch.cuda.is_available():
        pytest.skip("this host has a GPU")
    assert report.accelerator.kind in ("none", "npu")
    if report.accelerator.kind == "none":
        assert "no accelerator" in report.accelerator.describe()
    assert report.torch_api.has_setter is True
    if hasattr(torch._C, "_accelerator_getAllocatorSettings"):
        assert report.live_settings == "" and "getAllocatorSettings" in report.live_settings_source
    assert check_allocator(verl_tree=verl_trees["0.9.1"]) == []


@pytest.mark.slow
def test_nothing_heavy_is_imported(tmp_path, verl_trees):
    """Lint path, live check and doctor import none of torch, torch_npu, vllm, sglang, verl."""
    script = tmp_path / "run.sh"
    script.write_text(
        "#!/bin/bash\nexport PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm\n"
    )
    prog = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from verl_lint.config.compose import Composer
        from verl_lint.launch.locate import tree_at
        from verl_lint.runs import Options
        from verl_lint.runner import lint_file
        from verl_lint.rules.allocator_live import check_allocator
        from verl_lint import doctor
        tree = tree_at(Path({str(verl_trees["0.9.1"].root)!r}), 'test')
        rep = lint_file(Path({str(script)!r}), Options(verl_tree=tree, versions={{'vllm': '0.12.0'}}), Composer(cache=False))
        assert [d.code for d in rep.diagnostics] == ['VL607'], rep
        check_allocator({{'name': 'vllm'}}, verl_tree=tree)
        doctor.build(type('A', (), {{'verl_root': {str(verl_trees["0.9.1"].root)!r}, 'verl': None, 'accelerator': None, 'rollout': 'vllm'}})())
        heavy = sorted(m for m in ('torch', 'torch_npu', 'vllm', 'sglang', 'verl') if m in sys.modules)
        print(heavy)
        """
    )
    proc = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize(
    "files,kind",
    [
        ((), "none"),
        (("dev/davinci0", "dev/davinci_manager"), "npu"),
        (("proc/driver/nvidia/gpus/0000:01:00.0/information",), "cuda"),
    ],
)
def test_detect_accelerator_from_device_files(tmp_path, files, kind):
    if "torch" in sys.modules and sys.modules["torch"].cuda.is_available():
        pytest.skip("this host has a GPU")
    for f in files:
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("")
    assert detect_accelerator(str(tmp_path)).kind == kind


def test_live_rules_are_registered_and_documented():
    live = [r for r in REGISTRY if r.live]
    assert {r.code for r in live} == {"VL651", "VL652"}
    for r in live:
        for heading in ("## What it does", "## Why is this bad?", "## Use instead"):
            assert heading in r.doc, (r.code, heading)


def test_allocator_facts_load_without_rule_code():
    """The allocator facts (settings grammar, host, verl's code) are a layer below the rules:
    importing them loads neither the registry nor any rule module (issue #19)."""
    prog = (
        "import sys\n"
        "import verl_lint.allocator.alloc_conf, verl_lint.allocator.host, verl_lint.allocator.verl_code\n"
        "print(sorted(m for m in sys.modules if m.startswith('verl_lint.rules') or m == 'verl_lint.registry'))\n"
    )
    proc = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"


def test_live_check_in_a_fresh_process_and_live_rules_listed(verl_trees):
    """The live check alone (no rule pack imported first) reports the env rules under their
    registered names, and the CLI lists and documents the live rules."""
    prog = textwrap.dedent(
        f"""
        from pathlib import Path
        from verl_lint.launch.locate import tree_at
        from verl_lint.rules.allocator_live import check_allocator
        tree = tree_at(Path({str(verl_trees["0.9.1"].root)!r}), 'test')
        env = {{'PYTORCH_CUDA_ALLOC_CONF': 'expandable_segments:true'}}
        print([(d.code, d.name, str(d.severity)) for d in check_allocator(None, accelerator='cuda', verl_tree=tree, environ=env)])
        """
    )
    proc = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "[('VL602', 'alloc-conf-bad-value', 'error')]"
    listing = subprocess.run(
        [sys.executable, "-m", "verl_lint.cli", "rules"], capture_output=True, text=True, timeout=120
    )
    assert listing.returncode == 0, listing.stderr[-2000:]
    rows = {line.split()[0]: line.split()[1] for line in listing.stdout.splitlines() if line.startswith("VL65")}
    assert rows == {"VL651": "allocator-setter-missing", "VL652": "verl-never-enables-expandable-segments"}
    doc = subprocess.run(
        [sys.executable, "-m", "verl_lint.cli", "rule", "VL651"], capture_output=True, text=True, timeout=120
    )
    assert doc.returncode == 0 and "## Why is this bad?" in doc.stdout and "torch-npu 2.6.0, 2.6.0.post3" in doc.stdout


# --------------------------------------------------------------- doctor ----


def _doctor(*argv):
    p = argparse.ArgumentParser()
    doctor.add_arguments(p)
    return p.parse_args(list(argv))


def test_doctor_text_and_exit_codes(capsys, clean_env):
    assert doctor.run(_doctor("--verl", "0.9.1", "--accelerator", "npu")) == 0
    out = capsys.readouterr().out
    for needle in ("accelerator      NPU", "torch-npu", "PYTORCH_NPU_ALLOC_CONF", "verl/utils/device.py:137",
                   "platform_npu.py:102", "errors swallowed", "ActorRolloutRefWorker", "no findings"):  # fmt: skip
        assert needle in out, needle
    assert doctor.run(_doctor("--verl", "0.7.1", "--accelerator", "npu")) == 1
    out = capsys.readouterr().out
    assert "on npu  -> no path" in out and "VL652" in out


def test_doctor_json(capsys, clean_env, monkeypatch):
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    assert doctor.run(_doctor("--verl", "0.9.1", "--accelerator", "cuda", "--rollout", "vllm", "--format", "json")) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["accelerator"]["kind"] == "cuda"
    assert data["allocator_env"]["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    assert data["verl"]["set_expandable_segments"] == "verl/utils/device.py:137"
    assert {s["platform"] for s in data["verl"]["setters"]} == {"cuda", "npu"}
    assert [d["code"] for d in data["diagnostics"]] == ["VL607"]


def test_doctor_reads_the_device_through_the_real_torch_cpu_build(capsys, clean_env):
    """Without --accelerator, doctor asks torch in a child interpreter: this machine's CPU build
    sees no device, and says so (verl-lint's own process imports nothing)."""
    import torch  # the real CPU build the test environment installs

    doctor.run(_doctor("--verl", "0.9.1"))
    out = capsys.readouterr().out
    assert f"device           none: torch {torch.__version__} sees no CUDA or NPU device" in out, out
    assert "--gpu-memory" not in out  # no device: nothing to judge memory against
    doctor.run(_doctor("--verl", "0.9.1", "--format", "json"))
    data = json.loads(capsys.readouterr().out)
    assert data["device"] == {
        "torch": torch.__version__,
        "kind": None,
        "count": 0,
        "name": "",
        "gib": None,
        "error": "",
    }
    # checked as if on an accelerator: the live device is not read
    doctor.run(_doctor("--verl", "0.9.1", "--accelerator", "cuda", "--format", "json"))
    assert json.loads(capsys.readouterr().out)["device"] is None


def test_device_probe_without_torch_says_why():
    """An interpreter that cannot import torch (site-packages off): no device, and the reason."""
    d = probe_device([sys.executable, "-S"])
    assert d.torch is None and d.gib is None and "No module named 'torch'" in d.error
    assert d.describe().startswith("unknown: torch cannot be imported here")


def test_doctor_bad_root(capsys, tmp_path):
    assert doctor.run(_doctor("--verl-root", str(tmp_path))) == 2
    assert "not a verl tree" in capsys.readouterr().err


def test_accelerator_describe():
    assert Accelerator("none", "x").describe() == "no accelerator (x)"
    assert Accelerator("npu", "2 devices").describe() == "NPU (2 devices)"


def test_env_default_written_by_verl_counts_as_enabling(tmp_path, torch_npu_pkgs):
    """A verl that enables expandable segments through a PYTORCH_NPU_ALLOC_CONF default in code
    (instead of the setter) is not reported."""
    root = _synthetic_tree(tmp_path / "envdefault", "pass")
    (root / "verl" / "workers" / "env_defaults.py").write_text(
        'import os\nos.environ["PYTORCH_NPU_ALLOC_CONF"] = "expandable_segments:True"\n'
    )
    tree = tree_at(root, "test")
    v = analyze_verl(str(tree.root))
    assert [(w.var, w.value) for w in v.env_writes] == [("PYTORCH_NPU_ALLOC_CONF", "expandable_segments:True")]
    assert v.enables_training_on("npu")
    assert (
        check_allocator(None, accelerator="npu", verl_tree=tree, torch_npu_dir=torch_npu_pkgs[NPU_AFTER], environ={})
        == []
    )


def test_installed_torch_version_keeps_its_local_label():
    """torch's wheels carry a local version label (`2.13.0+cpu`, from the `torch-2.13.0+cpu.dist-info`
    directory): read as importlib.metadata reads it. torch is an optional extra: without it there
    is nothing to compare."""
    from importlib import metadata

    from verl_lint import environment

    try:
        expected = metadata.version("torch")
    except metadata.PackageNotFoundError:
        pytest.skip("torch is not installed (an optional extra; the test environment installs it)")
    assert environment.installed_version("torch") == expected


def test_installed_versions_match_importlib_metadata(tmp_path, monkeypatch):
    """Versions read from metadata directory names agree with importlib.metadata for every
    distribution in this environment, an egg-info is handed to importlib.metadata, and an
    absent distribution is None."""
    from importlib import metadata

    from verl_lint import environment

    dists = {d.metadata["Name"] for d in metadata.distributions()}
    assert {"hydra-core", "omegaconf"} <= dists
    for name in dists:
        assert environment.installed_version(name) == metadata.version(name), name

    egg = tmp_path / "Some.Pkg-0.3-py3.11.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: Some.Pkg\nVersion: 0.3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    environment.installed_version.cache_clear()
    try:
        assert environment.installed_version("some-pkg") == metadata.version("some-pkg") == "0.3"
        assert environment.installed_version("no-such-distribution") is None
    finally:
        environment.installed_version.cache_clear()
