"""Engine versions from evidence (verl_lint/versions.py): the flag or setting, the installed
package, then the ranges the verl tree and the project declare; a fact is an error only where
every admitted release agrees, and with no evidence the rules stay silent and say so once.

Real files, real verl releases from the cache, the CLI in a subprocess.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import json_findings
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from verl_lint.engines import versions as V

XF = "#!/bin/bash\nexport VLLM_ATTENTION_BACKEND=XFORMERS\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm\n"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "verl_lint.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def findings(*args: str, cwd: Path) -> list[dict]:
    p = cli("check", *args, "--format", "json", "--fail-on", "never", cwd=cwd)
    assert p.returncode == 0, p.stderr
    return json_findings(p.stdout)


# ------------------------------------------------------------ declarations ----


def test_requirements_are_read_from_every_kind_of_file(tmp_path):
    (tmp_path / "setup.py").write_text(
        textwrap.dedent(
            """\
            from setuptools import setup
            VLLM = ["vllm>=0.8.5,<=0.12.0", "tensordict"]
            setup(name="x", install_requires=["torch"], extras_require={"vllm": VLLM, "sglang": ["sglang[srt,openai]==0.5.6"]})
            """
        )
    )
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n[project.optional-dependencies]\nrollout = ["vllm<=0.11.0"]\n'
    )
    (tmp_path / "requirements.txt").write_text("# vllm==0.1.0\nvllm==0.8.4 ; python_version > '3'\nray\n")
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "Dockerfile.vllm").write_text(
        'FROM x\nRUN pip install --no-cache-dir \\\n    "vllm==0.10.0" torch-npu==2.7.1\n# RUN echo vllm==0.2.0\n'
    )
    found = V.declarations(str(tmp_path))
    assert [(str(d.spec), d.path) for d in found["vllm"]] == [
        ("<=0.12.0,>=0.8.5", "setup.py"),
        ("<=0.11.0", "pyproject.toml"),
        ("==0.8.4", "requirements.txt"),
        ("==0.10.0", "docker/Dockerfile.vllm"),
    ]
    assert [str(d.spec) for d in found["sglang"]] == ["==0.5.6"] and [str(d.spec) for d in found["torch_npu"]] == [
        "==2.7.1"
    ]
    # intersected, package metadata first: requirements.txt's 0.8.4 contradicts setup.py and is left
    # out; the docker pins count only where nothing else is declared (torch-npu here)
    ev = V.declared_evidence("vllm", (str(tmp_path),))
    assert [v for v in ("0.8.4", "0.8.5", "0.10.0", "0.11.0", "0.11.1") if ev.admits(V.Version(v))] == [
        "0.8.5",
        "0.10.0",
        "0.11.0",
    ]
    assert ev.source == "vllm<=0.12.0,>=0.8.5 in setup.py, vllm<=0.11.0 in pyproject.toml"
    npu = V.declared_evidence("torch_npu", (str(tmp_path),))
    assert npu.pinned == V.Version("2.7.1") and npu.source == "torch-npu==2.7.1 in docker/Dockerfile.vllm"


def test_a_verl_wheel_declares_its_engines_in_metadata(verl_trees):
    ev91 = V.declared_evidence("vllm", (str(verl_trees["0.9.1"].root),))
    assert ev91.pinned == V.Version("0.24.0") and "verl-0.9.1.dist-info/METADATA" in ev91.source
    ev71 = V.declared_evidence("vllm", (str(verl_trees["0.7.1"].root),))
    assert ev71.pinned is None and ev71.admits(V.Version("0.12.0")) and not ev71.admits(V.Version("0.12.1"))
    assert not V.declared_evidence("vllm_ascend", (str(verl_trees["0.9.1"].root),)).known


# ----------------------------------------------------------------- judging ----


def test_judge_all_some_none_and_unknown_releases():
    releases = ["0.8.5.post1", "0.9.2", "0.10.0", "0.11.0", "0.12.0"]
    rng = V.EngineReleases(
        "vllm", groups=((SpecifierSet(">=0.10.0,<=0.12.0"),),), source="vllm>=0.10.0,<=0.12.0 in setup.py"
    )
    assert V.judge(rng, releases, lambda r: True).level == "all"
    some = V.judge(rng, releases, lambda r: r == "0.12.0")
    assert (
        some.level == "some"
        and some.note == "on vLLM 0.12.0, of the releases allowed by vllm>=0.10.0,<=0.12.0 in setup.py"
    )
    assert V.judge(rng, releases, lambda r: r == "0.9.2").level == "none"
    # releases older (or newer) than the bundled ones are unknown: not "every release"
    old = V.EngineReleases("vllm", groups=((SpecifierSet("<=0.11.0"),),), source="x")
    assert V.judge(old, releases, lambda r: True).level == "some"
    assert V.judge(old, releases, lambda r: True, older=True).level == "all"
    assert (
        V.judge(
            V.EngineReleases("vllm", groups=((SpecifierSet("<=0.6.3"),),)), releases, lambda r: True, older=False
        ).level
        == "none"
    )
    # no evidence: unanimous facts still hold (a misspelling), others are skipped, never guessed
    none = V.EngineReleases("vllm")
    assert V.judge(none, releases, lambda r: True, True, True).level == "all"
    assert V.judge(none, releases, lambda r: r == "0.12.0").level == "skipped"
    assert V.judge(none, releases, lambda r: False).level == "none"
    assert V.span(["0.9.2", "0.10.0", "0.12.0"], releases) == "0.9.2-0.10.0, 0.12.0"


# ------------------------------------------------------------- end to end ----


@pytest.mark.slow
def test_a_range_the_project_declares_decides_the_severity(lint, tmp_path):
    """verl 0.7.1's wheel declares vllm>=0.8.5,<=0.12.0; the project's own requirements.txt next
    to the script narrows it (the TinyZero / Logic-RL layout: a vendored verl, pins at the root)."""
    req = tmp_path / "requirements.txt"

    def xf():
        return [d for d in lint(XF, "0.7.1").diagnostics if d.key == "VLLM_ATTENTION_BACKEND"]

    req.write_text("vllm==0.12.0\n")  # every admitted release crashes
    [d] = xf()
    assert (d.code, str(d.severity)) == ("VL501", "error") and "requirements.txt" in d.message
    req.write_text("vllm>=0.11.0,<=0.13.0\n")  # within verl's <=0.12.0: 0.11.0-0.12.0, only 0.12.0 crashes
    [d] = xf()
    assert (d.code, str(d.severity)) == (
        "VL501",
        "warning",
    ) and "on vLLM 0.12.0, of the releases allowed by vllm<=0.13.0,>=0.11.0 in requirements.txt" in d.message
    req.write_text("vllm<=0.6.3\n")  # TinyZero: xFormers is the workaround verl prescribes there
    assert xf() == []


@pytest.mark.slow
def test_no_evidence_is_silent_with_one_note_per_run_and_the_flag_enables(tmp_path):
    for name in ("a.sh", "b.sh"):
        (tmp_path / name).write_text(
            XF.replace("VLLM_ATTENTION_BACKEND=XFORMERS", "VLLM_ASCEND_ENABLE_DENSE_OPTIMIZE=1")
        )
    got = findings(".", "--verl", "0.9.1", cwd=tmp_path)
    assert [(f["code"], f["severity"], f["path"]) for f in got] == [("VL010", "info", "a.sh")]
    assert "VL503" in got[0]["message"] and "--vllm-ascend" in got[0]["help"]
    got = findings(".", "--verl", "0.9.1", "--vllm-ascend", "0.13.0", cwd=tmp_path)
    assert [(f["code"], f["path"]) for f in got] == [("VL503", "a.sh"), ("VL503", "b.sh")]
    assert "vllm-ascend 0.13.0 (--vllm-ascend)" in got[0]["message"]


@pytest.mark.slow
def test_the_setting_the_flag_and_its_alias(tmp_path):
    (tmp_path / "run.sh").write_text(XF)
    (tmp_path / "pyproject.toml").write_text('[tool.verl-lint]\nvllm = "0.12.0"\n')
    [f] = findings("run.sh", "--verl", "0.9.1", cwd=tmp_path)
    assert (f["code"], f["severity"]) == ("VL501", "error") and "vLLM 0.12.0 ([tool.verl-lint] vllm)" in f["message"]
    [f] = findings("run.sh", "--verl", "0.9.1", "--vllm", "0.15.1", cwd=tmp_path)  # the flag wins
    assert f["code"] == "VL502" and "vLLM 0.15.1 (--vllm)" in f["message"]
    [f] = findings("run.sh", "--verl", "0.9.1", "--vllm-version", "0.13.0", cwd=tmp_path)
    assert f["code"] == "VL501" and "vLLM 0.13.0 (--vllm)" in f["message"]
    p = cli("check", "run.sh", "--verl", "0.9.1", "--vllm", "latest", cwd=tmp_path)
    assert (
        p.returncode == 2
        and p.stderr.strip() == "verl-lint: error: --vllm: 'latest' is not a version (e.g. 0.8.5, 0.10.2rc1)"
    )
    (tmp_path / "pyproject.toml").write_text("[tool.verl-lint]\nsglang = 0.5\n")
    p = cli("check", "run.sh", "--verl", "0.9.1", cwd=tmp_path)
    assert (
        p.returncode == 2
        and p.stderr.count("\n") == 1
        and "[tool.verl-lint] sglang = 0.5: must be a version string" in p.stderr
    )
    assert "Traceback" not in p.stderr


@pytest.mark.slow
def test_verl_default_engine_kwarg_is_one_info_per_run(tmp_path):
    """verl 0.5.0's shipped rollout.yaml sets engine_kwargs.vllm.disable_mm_preprocessor_cache,
    which vLLM 0.34.0 no longer has: verl's problem, reported once as info, never on the script."""
    vllm = "#!/bin/bash\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm {}\n"
    (tmp_path / "a.sh").write_text(vllm.format("trainer.nnodes=1"))
    (tmp_path / "b.sh").write_text(vllm.format("trainer.nnodes=2"))
    (tmp_path / "c.sh").write_text(
        vllm.format("actor_rollout_ref.rollout.engine_kwargs.vllm.disable_mm_preprocessor_cache=True")
    )
    (tmp_path / "d.sh").write_text(vllm.format("").replace("name=vllm", "name=sglang"))
    got = findings(".", "--verl", "0.5.0", "--vllm", "0.34.0", "--select", "VL7", cwd=tmp_path)
    assert [(f["code"], f["severity"], f["path"]) for f in got] == [
        ("VL701", "info", "a.sh"),
        ("VL701", "error", "c.sh"),
    ]
    assert got[0]["message"].startswith(
        "in verl's own default config: `disable_mm_preprocessor_cache` is not a vLLM 0.34.0"
    )
    assert got[1]["line"] == 2 and got[1]["column"] > 40  # at the user's override
    # the declared range of verl 0.5.0 (vllm>=0.7.3,<=0.8.5) has the argument: nothing at all
    assert findings(".", "--verl", "0.5.0", "--select", "VL7", cwd=tmp_path) == []


@pytest.mark.parametrize(
    "text", ["==0.8.5", ">=0.8.5,<=0.12.0", "==0.8.*", "===0.8.5", "<=0.6.3", "==0.8.5,!=0.8.4", ""]
)
def test_a_range_kept_as_text_judges_as_its_specifier_set(text):
    """What a verl tree declares is kept on disk as the text packaging writes (`str(SpecifierSet)`)
    and parsed on first use: a job start reads it back without packaging.specifiers. Judged as
    text or as a SpecifierSet, the evidence admits the same versions and has the same pin."""
    spec = SpecifierSet(text)
    as_set, as_text = V.EngineReleases("vllm", groups=((spec,),)), V.EngineReleases("vllm", groups=((str(spec),),))
    assert as_text.pinned == as_set.pinned
    for v in ("0.6.3", "0.8.4", "0.8.5", "0.8.6", "0.12.0", "0.13.0", "0.8.5rc1"):
        assert as_text.admits(Version(v)) == as_set.admits(Version(v)), (text, v)
        assert as_text.admits_release(Version(v)) == as_set.admits_release(Version(v)), (text, v)
    assert V.probes(as_text) == V.probes(as_set)
    two = V.EngineReleases("vllm", groups=((str(spec),), (str(SpecifierSet("<=0.9.0")),)))
    assert two.pinned == V.EngineReleases("vllm", groups=((spec,), (SpecifierSet("<=0.9.0"),))).pinned
