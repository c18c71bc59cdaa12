"""5xx environment rules: engine-release facts, unknown names, and exports that never reach Ray.

Every env rule's bad/good examples also run in test_rule_examples.py; these tests pin the
version-dependent behaviour, the locations and the help text.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import textwrap

import pytest
from conftest import json_findings
from packaging.version import Version

from verl_lint.engines.schemas import snapshot
from verl_lint.knowledge import load_table
from verl_lint.registry import REGISTRY
from verl_lint.rules.env import facts
from verl_lint.rules.ray_env import verl_runtime_env

LAUNCH = "python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm trainer.nnodes=1\n"


def script(*lines: str, launch: str = LAUNCH) -> str:
    return "#!/bin/bash\n" + "".join(line + "\n" for line in lines) + launch


def env_diags(report):
    return [d for d in report.diagnostics if d.code.startswith("VL5")]


# ---------------------------------------------------------------- the data ----


def test_env_facts_table_is_well_formed():
    table = load_table("env_vars.yaml")
    for engine in ("vllm", "vllm_ascend"):
        for rec in getattr(table, engine):
            assert rec.code in ("VL501", "VL502", "VL503"), rec
            assert REGISTRY.get(rec.code) is not None
            for v in (rec.since, rec.until):
                if v:
                    Version(v)
            if rec.value:
                re.compile(rec.value)
            assert rec.message and rec.help and rec.evidence, rec.name
        assert facts(engine)


def test_env_facts_agree_with_the_envs_snapshots():
    """What the table says about removals matches vllm/envs.py of the real wheels."""
    vllm = snapshot("vllm")
    assert vllm.history("env", "VLLM_USE_V1")[-1] == "0.11.1"
    assert vllm.history("env", "VLLM_ALL2ALL_BACKEND")[-1] == "0.16.0"
    assert vllm.history("env", "VLLM_TORCH_PROFILER_DIR")[-1] == "0.16.0"
    assert vllm.history("env", "VLLM_USE_TRITON_FLASH_ATTN")[-1] == "0.11.1"
    assert vllm.history("env", "VLLM_SLEEP_WHEN_IDLE")[-1] == "0.18.1"  # 0.18.0 not read; 0.17.1 still had it
    assert vllm.present("env", "VLLM_ATTENTION_BACKEND", "0.14.1") and not vllm.present(
        "env", "VLLM_ATTENTION_BACKEND", "0.15.1"
    )
    for name in ("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "VLLM_WORKER_MULTIPROC_METHOD", "VLLM_LOGGING_LEVEL"):
        assert vllm.present("env", name, vllm.versions[-1]), name  # still valid: never flagged
    asc = snapshot("vllm_ascend")
    assert asc.history("env", "VLLM_ASCEND_ENABLE_FLASHCOMM") == ("0.9.1", "0.11.0rc1")
    assert asc.history("env", "VLLM_ASCEND_ENABLE_FLASHCOMM1")[0] == "0.11.0rc1"
    assert asc.history("env", "VLLM_ASCEND_ENABLE_DENSE_OPTIMIZE") == ("0.10.2rc1", "0.13.0")
    assert asc.history("env", "VLLM_ASCEND_ENABLE_PREFETCH_MLP") == ("0.10.2rc1", "0.18.0rc1")


# ----------------------------------------------------- version-dependent ----


@pytest.mark.parametrize(
    "vllm,code,severity",
    [
        ("0.10.2", "VL501", "error"),
        ("0.11.0", "VL501", "error"),
        ("0.11.1", "VL502", "warning"),
        ("0.34.0", "VL502", "warning"),
        (None, "VL502", "warning"),  # verl 0.9.1 pins vllm==0.24.0
    ],
)
def test_vllm_use_v1_zero_by_release(lint, vllm, code, severity):
    rep = lint(script("export VLLM_USE_V1=0"), "0.9.1", versions={"vllm": vllm} if vllm else {})
    [d] = env_diags(rep)
    assert (d.code, str(d.severity)) == (code, severity)
    assert (d.span.line, d.span.col) == (2, 8)


def test_vllm_use_v1_one_is_only_redundant(lint):
    [d] = env_diags(lint(script("export VLLM_USE_V1=1"), "0.9.1", versions={"vllm": "0.10.2"}))
    assert d.code == "VL502" and str(d.severity) == "info"


@pytest.mark.parametrize(
    "vllm,code",
    [
        ("0.11.0", "VL502"),
        ("0.12.0", "VL501"),
        ("0.14.1", "VL501"),
        ("0.15.1", "VL502"),
        ("0.34.0", "VL502"),
        (None, "VL502"),
    ],
)
def test_xformers_by_release(lint, vllm, code):
    rep = lint(script("export VLLM_ATTENTION_BACKEND=XFORMERS"), "0.9.1", versions={"vllm": vllm} if vllm else {})
    [d] = env_diags(rep)
    assert d.code == code
    assert "XFORMERS" not in d.help.split("use")[-1] or "delete" in d.help  # never suggests XFORMERS as a backend


@pytest.mark.slow
def test_gspo_npu_script_is_flagged_at_the_export_with_the_replacement(lint):
    gspo = textwrap.dedent(
        """\
        #!/bin/bash
        set -x
        project_name='GSPO'
        export VLLM_USE_V1=1
        export VLLM_ATTENTION_BACKEND=XFORMERS
        export HCCL_CONNECT_TIMEOUT=3600
        python3 -m verl.trainer.main_ppo \\
            algorithm.adv_estimator=grpo \\
            actor_rollout_ref.rollout.name=vllm \\
            trainer.device=npu
        """
    )
    rep = lint(gspo, "0.9.1", versions={"vllm": "0.13.0"})
    [d] = [d for d in env_diags(rep) if d.key == "VLLM_ATTENTION_BACKEND"]
    assert d.code == "VL501" and str(d.severity) == "error" and (d.span.line, d.span.col) == (5, 8)
    assert "attention_backend=FLASH_ATTN" in d.help and "delete the export" in d.help
    assert "vLLM 0.13.0 (given)" in d.message
    # verl 0.7.1 declares vllm>=0.8.5,<=0.12.0: it crashes only on 0.12.0 of those, a warning that says so
    [d] = [d for d in env_diags(lint(gspo, "0.7.1")) if d.key == "VLLM_ATTENTION_BACKEND"]
    assert d.code == "VL501" and str(d.severity) == "warning"
    assert (
        "on vLLM 0.12.0, of the releases allowed by vllm<=0.12.0,>=0.8.5 in verl-0.7.1.dist-info/METADATA" in d.message
    )


def test_deprecated_attention_backend_names_the_engine_kwarg(lint):
    [d] = env_diags(lint(script("export VLLM_ATTENTION_BACKEND=FLASHINFER"), "0.9.1", versions={"vllm": "0.13.0"}))
    assert d.code == "VL502" and "+actor_rollout_ref.rollout.engine_kwargs.vllm.attention_backend=FLASHINFER" in d.help
    assert (
        env_diags(lint(script("export VLLM_ATTENTION_BACKEND=FLASHINFER"), "0.9.1", versions={"vllm": "0.12.0"})) == []
    )


def test_flashcomm_renamed_by_ascend_release(lint):
    s = script("export VLLM_ASCEND_ENABLE_FLASHCOMM=1")
    assert env_diags(lint(s, "0.9.1", versions={"vllm_ascend": "0.9.1"})) == []  # the name of that release
    [d] = env_diags(lint(s, "0.9.1", versions={"vllm_ascend": "0.13.0"}))
    assert d.code == "VL503" and "VLLM_ASCEND_ENABLE_FLASHCOMM1=1" in d.help and "fallback" in d.message
    [d] = env_diags(lint(s, "0.9.1", versions={"vllm_ascend": "0.23.0"}))
    assert d.code == "VL503" and "no longer read" in d.message


def test_removed_name_without_a_record_uses_the_snapshot(lint):
    s = script("export VLLM_ASCEND_ENABLE_TOPK_OPTIMIZE=1")
    [d] = env_diags(lint(s, "0.9.1", versions={"vllm_ascend": "0.11.0"}))
    assert d.code == "VL503" and "removed in vllm-ascend 0.10.2rc1" in d.message
    # no vllm-ascend evidence (not installed, no flag, no verl release declares it): silent, and one VL010
    rep = lint(s, "0.9.1")
    assert env_diags(rep) == [] and [d.code for d in rep.diagnostics] == ["VL010"]
    assert "--vllm-ascend" in rep.diagnostics[0].help


def test_unknown_name_did_you_mean(lint):
    [d] = env_diags(lint(script("export VLLM_WORKER_MULTIPROC_METOD=spawn"), "0.9.1", versions={"vllm": "0.20.2"}))
    assert d.code == "VL504" and "VLLM_WORKER_MULTIPROC_METHOD" in d.help
    assert "Unknown vLLM environment variable detected" in d.message


def test_names_verl_itself_reads_are_known_per_release(lint):
    s = script("export VLLM_ASCEND_TASK_QUEUE_ENABLE=2")
    assert env_diags(lint(s, "0.9.1")) == []  # verl 0.9.1 platform_npu.py reads it
    [d] = env_diags(lint(s, "0.7.1"))  # nothing reads it in 0.7.1
    assert d.code == "VL504"


def test_vllm_vars_are_quiet_when_the_rollout_runs_sglang(lint):
    s = script("export VLLM_USE_V1=0", "export VLLM_NO_SUCH_THING=1", launch=LAUNCH.replace("name=vllm", "name=sglang"))
    assert env_diags(lint(s, "0.9.1")) == []


def test_runtime_env_overrides_are_checked_too(lint):
    s = script(launch=LAUNCH.replace("trainer.nnodes=1", "+ray_kwargs.ray_init.runtime_env.env_vars.VLLM_USE_V1=0"))
    [d] = env_diags(lint(s, "0.9.1", versions={"vllm": "0.11.0"}))
    assert d.code == "VL501" and d.span.line == 2


# ------------------------------------------------------- env not reaching Ray ----


def test_verl_runtime_env_read_from_source(verl_trees):
    fwd91, defaults91 = verl_runtime_env(str(verl_trees["0.9.1"].root))
    assert {"PYTHONHASHSEED", "VLLM_BATCH_INVARIANT", "NCCL_ALGO"} <= fwd91
    assert {"NCCL_DEBUG", "VLLM_LOGGING_LEVEL", "VLLM_DISABLE_COMPILE_CACHE"} <= defaults91
    fwd71, defaults71 = verl_runtime_env(str(verl_trees["0.7.1"].root))
    assert fwd71 == frozenset()
    assert "CUDA_DEVICE_MAX_CONNECTIONS" in defaults71 and "CUDA_DEVICE_MAX_CONNECTIONS" not in defaults91


def test_a_latin1_file_in_the_verl_tree_is_read_not_fatal(verl_trees, tmp_path):
    # verl's source is read as text: a stray non-UTF-8 byte (a Latin-1 comment) in any file the
    # rules read stopped the whole script with an internal UnicodeDecodeError.
    tree = tmp_path / "tree"
    shutil.copytree(verl_trees["0.9.1"].root / "verl", tree / "verl")
    (tree / "verl/zz_latin1.py").write_bytes(b'FLAG = "VLLM_MY_OWN_SWITCH"  # caf\xe9\n')
    for rel in (
        "trainer/constants_ppo.py",
        "workers/config/rollout.py",
        "workers/rollout/vllm_rollout/vllm_async_server.py",
    ):
        with open(tree / "verl" / rel, "ab") as f:
            f.write(b"# caf\xe9\n")
    run = tmp_path / "run.sh"
    run.write_text(
        script(
            "ray start --head",
            "export VLLM_MY_OWN_SWITCH=1",
            "export VLLM_NO_SUCH_THING=1",
            launch=LAUNCH.replace(
                "trainer.nnodes=1", "+actor_rollout_ref.rollout.engine_kwargs.vllm.max_model_len=8192"
            ),
        )
    )
    cmd = [
        sys.executable,
        "-m",
        "verl_lint.cli",
        "check",
        str(run),
        "--verl-root",
        str(tree),
        "--vllm",
        "0.12.0",
        "--format",
        "json",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert (
        proc.returncode == 0
        and proc.stderr == f"verl-lint: indexing verl tree at {tree.resolve()} (first run for this tree)\n"
    ), proc.stderr
    found = {(d["code"], d["key"].rsplit(".", 1)[-1]) for d in json_findings(proc.stdout)}
    # verl reads VLLM_MY_OWN_SWITCH (in the Latin-1 file): only the other name is unknown; the
    # server module and constants_ppo.py are still read (VL704, VL505).
    assert found == {
        ("VL504", "VLLM_NO_SUCH_THING"),
        ("VL505", "VLLM_MY_OWN_SWITCH"),
        ("VL505", "VLLM_NO_SUCH_THING"),
        ("VL704", "max_model_len"),
    }


def test_export_after_ray_start(lint):
    s = script(
        "export NCCL_DEBUG=INFO",
        "export NCCL_IB_HCA=mlx5",
        "ray start --head",
        "export NCCL_IB_HCA=mlx5_0",
        "export PYTHONHASHSEED=0",
    )
    ds = [d for d in env_diags(lint(s, "0.9.1")) if d.code == "VL505"]
    # NCCL_DEBUG was exported before `ray start` (reaches the raylet); NCCL_IB_HCA changed after it;
    # PYTHONHASHSEED is forwarded by verl 0.9.1 itself
    assert [(d.key, d.span.line) for d in ds] == [("NCCL_IB_HCA", 5)]
    assert "line 4" in ds[0].message
    ds71 = [d.key for d in env_diags(lint(s, "0.7.1")) if d.code == "VL505"]
    assert ds71 == ["NCCL_IB_HCA", "PYTHONHASHSEED"]  # 0.7.1 forwards nothing from the driver


def test_verl_default_names_say_the_default_is_dropped_too(lint):
    s = script("ray start --head", "export VLLM_LOGGING_LEVEL=DEBUG")
    [d] = [d for d in env_diags(lint(s, "0.9.1")) if d.code == "VL505"]
    assert "drops its own default" in d.message
    assert "+ray_kwargs.ray_init.runtime_env.env_vars.VLLM_LOGGING_LEVEL=DEBUG" in d.help


def test_ray_job_submit(lint):
    s = script(
        "export HF_HOME=/data/hf", launch="ray job submit --address=http://127.0.0.1:8265 --no-wait -- " + LAUNCH
    )
    [d] = [d for d in env_diags(lint(s, "0.9.1")) if d.code == "VL505"]
    assert d.key == "HF_HOME" and "--runtime-env-json" in d.help
    passed = script(
        "export HF_HOME=/data/hf",
        launch='ray job submit --runtime-env-json=\'{"env_vars": {"HF_HOME": "/data/hf"}}\' -- ' + LAUNCH,
    )
    assert [d for d in env_diags(lint(passed, "0.9.1")) if d.code == "VL505"] == []


def test_local_cluster_inherits_the_driver_env(lint):
    s = script("export NCCL_IB_HCA=mlx5", "export RAY_DEDUP_LOGS=0")
    assert [d for d in env_diags(lint(s, "0.9.1")) if d.code == "VL505"] == []


def test_ray_init_address_override(lint):
    s = script(
        "export NCCL_IB_HCA=mlx5", launch=LAUNCH.replace("trainer.nnodes=1", "+ray_kwargs.ray_init.address=auto")
    )
    [d] = [d for d in env_diags(lint(s, "0.9.1")) if d.code == "VL505"]
    assert d.key == "NCCL_IB_HCA" and d.span.line == 2


@pytest.mark.parametrize(
    "lines,extra",
    [
        (["export RAY_ADDRESS=local"], ""),
        (["export RAY_ADDRESS=${RAY_ADDRESS:-local}"], ""),  # the script's own value when the caller sets none
        (["ray start --head", "export RAY_ADDRESS=local"], ""),  # a new cluster, not the one started above
        (["export RAY_ADDRESS=local"], " +ray_kwargs.ray_init.address=auto"),  # "auto": RAY_ADDRESS decides
        (["export RAY_ADDRESS=10.0.0.1:6379"], " +ray_kwargs.ray_init.address=local"),  # an explicit address wins
    ],
)
def test_a_new_local_cluster_inherits_the_driver_env(lint, lines, extra):
    """ray.init starts a local cluster (its workers inherit the driver's environment) for the
    address "local"; RAY_ADDRESS counts only when ray_init.address is unset or "auto"."""
    s = script(*lines, "export NCCL_IB_HCA=mlx5", launch=LAUNCH.replace("\n", extra + "\n"))
    assert [d.key for d in env_diags(lint(s, "0.9.1")) if d.code == "VL505"] == []


def test_ray_address_from_the_environment_still_attaches(lint):
    s = script(
        "export RAY_ADDRESS=local",
        "export NCCL_IB_HCA=mlx5",
        launch=LAUNCH.replace("\n", " +ray_kwargs.ray_init.address=10.0.0.1:6379\n"),
    )
    assert [d.key for d in env_diags(lint(s, "0.9.1")) if d.code == "VL505"] == ["NCCL_IB_HCA"]


@pytest.mark.slow
def test_runtime_env_set_in_the_config_yaml_reaches_the_workers(lint, tmp_path):
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "my.yaml").write_text(
        "defaults:\n  - ppo_trainer\n  - _self_\nhydra:\n  searchpath:\n    - pkg://verl.trainer.config\n"
        "ray_kwargs:\n  ray_init:\n    runtime_env:\n      env_vars:\n        NCCL_IB_HCA: mlx5\n"
    )
    launch = f"python3 -m verl.trainer.main_ppo --config-path={conf} --config-name=my trainer.nnodes=1\n"
    s = script("ray start --head", "export NCCL_IB_HCA=mlx5", "export NCCL_SOCKET_IFNAME=eth0", launch=launch)
    assert [d.key for d in env_diags(lint(s, "0.9.1")) if d.code == "VL505"] == ["NCCL_SOCKET_IFNAME"]
