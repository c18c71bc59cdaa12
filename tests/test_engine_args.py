"""Engine argument schemas from real wheels, and verl's server-argument assembly from real releases.

The wheels are downloaded once per machine without dependencies (cached under
<cache>/wheels) and read straight from the zip; nothing is installed or imported.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from packaging.version import Version

from verl_lint.engines import schemas
from verl_lint.engines.assembly import SERVER_FILES, assembly_of, assembly_table, read_assembly_source
from verl_lint.engines.expressions import UNKNOWN, Evaluator
from verl_lint.engines.schemas import EngineNames, Snapshot, accepts, schema_for, snapshot
from verl_lint.engines.wheels import WheelSource, fetch_wheel

ACTOR = "actor_rollout_ref.rollout"
EK = f"+{ACTOR}.engine_kwargs"

# The smallest wheels of each layout (sizes checked with pip download --no-deps):
# vLLM 0.34.0 (239 MB, front end in entrypoints/common/cli_args.py), SGLang 0.5.2 (2 MB,
# dataclass ServerArgs), SGLang 0.5.20 (27 MB, msgspec namespace structs), vllm-ascend 0.9.1 (0.6 MB).
WHEELS = [
    ("vllm", "vllm", "0.34.0"),
    ("sglang", "sglang", "0.5.2"),
    ("sglang", "sglang", "0.5.20"),
    ("vllm_ascend", "vllm-ascend", "0.9.1"),
]


# ------------------------------------------------------- schemas from wheels ----


@pytest.mark.parametrize("engine,dist,version", WHEELS, ids=[f"{d}-{v}" for _, d, v in WHEELS])
def test_wheel_extraction_matches_bundled_snapshot(wheel, engine, dist, version):
    src = WheelSource(wheel(dist, version))
    try:
        names = schemas.ENGINES[engine].extract(src)
    finally:
        src.close()
    snap = snapshot(engine)
    assert version in snap.versions
    bundled = snap.names_at(version)
    assert names.args == bundled.args
    assert names.env == bundled.env
    assert names.args or names.env


def test_vllm_wheel_schema_facts(wheel):
    src = WheelSource(wheel("vllm", "0.34.0"))
    try:
        files = schemas.vllm_arg_files(src)
        names = schemas.extract_vllm(src)
    finally:
        src.close()
    # the front end serve.py imports make_arg_parser from (moved three times since 0.28)
    assert "vllm/entrypoints/common/cli_args.py" in files
    # engine fields, front-end fields and serve options are all accepted by `vllm serve`
    for arg in (
        "tensor_parallel_size",
        "enable_expert_parallel",
        "attention_backend",
        "api_server_count",
        "port",
        "headless",
    ):
        assert arg in names.args, arg
    assert "cuda_graph_sizes" not in names.args
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN" in names.env and "VLLM_USE_V1" not in names.env


def test_sglang_wheel_layouts(wheel):
    for version, fields in (("0.5.2", 150), ("0.5.20", 450)):
        src = WheelSource(wheel("sglang", version))
        try:
            names = schemas.extract_sglang(src)
        finally:
            src.close()
        assert len(names.args) > fields
        for arg in ("tp_size", "dp_size", "ep_size", "enable_memory_saver", "mem_fraction_static"):
            assert arg in names.args, (version, arg)
        assert "enable_expert_parallel" not in names.args  # vLLM-only


def test_installed_engine_is_read_from_its_source(wheel, tmp_path, monkeypatch):
    """An installed engine (located with find_spec, not imported) wins over the snapshots."""
    with zipfile.ZipFile(wheel("sglang", "0.5.2")) as zf:
        zf.extractall(tmp_path, [n for n in zf.namelist() if n.endswith(".py")])
    monkeypatch.setattr(schemas.environment, "installed_version", lambda dist: "0.5.2" if dist == "sglang" else None)
    monkeypatch.setattr(
        schemas.environment, "package_dir", lambda top: tmp_path / "sglang" if top == "sglang" else None
    )
    s = schema_for("sglang", Version("0.5.2"))
    assert s.origin == "installed" and s.version == "0.5.2" and not s.note
    assert s.names.args == snapshot("sglang").names_at("0.5.2").args
    # --sglang-version of another release: the snapshot answers
    assert schema_for("sglang", Version("0.5.19")).origin == "snapshot"


# ------------------------------------------------------ snapshot resolution ----


def test_schema_resolution_by_version():
    snap = snapshot("vllm")
    newest = snap.versions[-1]
    s = schema_for("vllm", Version("0.12.0"))
    assert s.version == "0.12.0" and s.note == "" and s.confident
    assert "cuda_graph_sizes" in s.names.args
    s = schema_for("vllm", Version("0.14.0"))  # same minor as the 0.14.1 snapshot
    assert s.version == "0.14.1" and s.confident and "0.14.0" in s.note
    s = schema_for("vllm", Version("9.0.0"))
    assert s.version == newest and not s.confident and "newer than" in s.note


def test_snapshot_history_messages():
    snap = snapshot("vllm")
    assert snap.describe("args", "cuda_graph_sizes", "0.34.0") == "removed in vLLM 0.13.0 (last in 0.12.0)"
    assert snap.describe("args", "attention_backend", "0.12.0") == "only exists from vLLM 0.13.0 on"
    assert snap.describe("env", "VLLM_USE_V1", "0.20.2") == "removed in vLLM 0.11.1 (last in 0.11.0)"
    assert snap.present("env", "VLLM_ATTENTION_BACKEND", "0.14.1") and not snap.present(
        "env", "VLLM_ATTENTION_BACKEND", "0.15.1"
    )


def test_snapshot_roundtrip(tmp_path):
    per = {
        "1.0": EngineNames(frozenset({"a", "b"}), frozenset({"X"})),
        "1.1": EngineNames(frozenset({"b"}), frozenset({"X"})),
        "1.2": EngineNames(frozenset({"a", "b", "c"}), frozenset()),
    }
    snap = Snapshot.build("vllm", per)
    assert snap.names["args"]["a"] == ("1.0", "1.1", "1.2")
    assert snap.names["env"]["X"] == ("1.0", "1.2")
    import yaml

    again = Snapshot.from_table(yaml.safe_load(snap.to_yaml("header")))
    for v in per:
        assert again.names_at(v) == per[v]


def test_bundled_snapshots_are_compact_and_sorted():
    root = Path(__file__).resolve().parent.parent / "rules" / "engine_args"
    for engine in ("vllm", "sglang", "vllm_ascend"):
        text = (root / f"{engine}.yaml").read_text()
        assert text.startswith("# Generated by scripts/make_engine_schemas.py")
        snap = snapshot(engine)
        assert list(snap.versions) == sorted(snap.versions, key=Version)
        for table in snap.names.values():
            assert list(table) == sorted(table)
            for name, toggles in table.items():
                assert toggles and all(t in snap.versions for t in toggles), (engine, name)


# -------------------------------------------------------- verl's assembly ----


def _overwrites(a) -> dict[str, set[tuple[str, ...]]]:
    out: dict[str, set[tuple[str, ...]]] = {}
    for e in a.entries:
        if e.overwrites:
            out.setdefault(e.key, set()).add(e.condition)
    return out


def test_enable_expert_parallel_unconditional_in_091_conditional_in_071(verl_trees):
    new = assembly_of(str(verl_trees["0.9.1"].root), "vllm")
    old = assembly_of(str(verl_trees["0.7.1"].root), "vllm")
    assert new.from_source and old.from_source
    assert new.function == old.function == "vLLMHttpServer.launch_server"
    assert _overwrites(new)["enable_expert_parallel"] == {()}
    assert _overwrites(old)["enable_expert_parallel"] == {("self.config.expert_parallel_size > 1",)}
    # 0.9.1 wires data parallelism whenever DP > 1, 0.7.1 only together with EP
    assert _overwrites(new)["data_parallel_size"] == {("self.config.data_parallel_size > 1",)}
    assert _overwrites(old)["data_parallel_size"] == {("self.config.expert_parallel_size > 1",)}


@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.4.1", "0.5.0", "0.6.1", "0.9.1"])
def test_vl706_a_keyword_the_sync_rollout_already_passes(lint, version):
    """verl 0.5-0.6's sync rollout calls `LLM(..., enable_prefix_caching=True, **engine_kwargs)`:
    the same key as an engine kwarg is a TypeError there; the async server (0.6's `mode=async`,
    every mode from 0.7) builds a dict instead, where that is no TypeError. verl 0.4 imports one
    of two rollouts by vLLM version, and only one names it: not judged there."""
    launch = "#!/bin/bash\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm {}\n"
    ek = "+actor_rollout_ref.rollout.engine_kwargs.vllm"
    twice = [
        d
        for d in lint(launch.format(f"{ek}.enable_prefix_caching=False {ek}.max_num_seqs=256"), version).diagnostics
        if d.code == "VL706"
    ]
    if version in ("0.4.1", "0.9.1"):
        assert twice == []
        both = [
            d.key for d in lint(launch.format(f"{ek}.enforce_eager=True"), version).diagnostics if d.code == "VL706"
        ]
        assert both == (["actor_rollout_ref.rollout.engine_kwargs.vllm.enforce_eager"] if version == "0.4.1" else [])
        if version == "0.4.1":  # the vLLM version picks the module `vllm_rollout/__init__.py` imports
            picked = lambda v: [
                d.key.rsplit(".", 1)[1]
                for d in lint(
                    launch.format(f"{ek}.enable_prefix_caching=False"), version, versions={"vllm": v}
                ).diagnostics
                if d.code == "VL706"
            ]  # noqa: E731
            assert picked("0.8.4") == ["enable_prefix_caching"] and picked("0.6.3") == []
        return
    # 0.6 also passes max_num_seqs from the rollout config
    assert [d.key.rsplit(".", 1)[1] for d in twice] == [
        "enable_prefix_caching",
        *(["max_num_seqs"] if version == "0.6.1" else []),
    ]
    d = twice[0]
    assert (d.span.line, d.span.col) == (2, 70)
    assert (
        "vllm_rollout_spmd.py:" in d.message
        and "LLM() got multiple values for keyword argument 'enable_prefix_caching'" in d.message
    )
    seen = lambda more: [
        d.code for d in lint(launch.format(f"{ek}.enforce_eager=True {more}"), version).diagnostics if d.code == "VL706"
    ]  # noqa: E731
    [help] = [d.help for d in lint(launch.format(f"{ek}.enforce_eager=True"), version).diagnostics if d.code == "VL706"]
    assert help == "remove the engine kwarg and set `actor_rollout_ref.rollout.enforce_eager` instead"
    if version == "0.6.1":
        assert seen("actor_rollout_ref.rollout.mode=async") == [] and seen("actor_rollout_ref.rollout.mode=$MODE") == []


def test_overwritten_keys_differ_exactly_as_the_source_says(verl_trees):
    new = _overwrites(assembly_of(str(verl_trees["0.9.1"].root), "vllm"))
    old = _overwrites(assembly_of(str(verl_trees["0.7.1"].root), "vllm"))
    # 0.9.1: PD-disaggregation kv_transfer_config; _preprocess_engine_kwargs (followed into the
    # helper method) forces moe_backend / weight_transfer_config for delta_sharded checkpoints.
    # 0.7.1: rollout.cudagraph_capture_sizes is written into engine_kwargs["cuda_graph_sizes"].
    assert set(new) - set(old) == {"kv_transfer_config", "moe_backend", "weight_transfer_config"}
    assert set(old) - set(new) == {"cuda_graph_sizes"}
    unconditional = lambda ow: {k for k, conds in ow.items() if () in conds}  # noqa: E731
    assert unconditional(new) == {"enable_expert_parallel"}
    assert unconditional(old) == set()


def test_assembly_kinds(verl_trees):
    a = assembly_of(str(verl_trees["0.9.1"].root), "vllm")
    kinds = {(e.key, e.phase, e.kind) for e in a.entries}
    assert ("compilation_config", "pre", "pop") in kinds  # popped, merged, honoured
    assert ("mm_processor_cache_gb", "pre", "setdefault") in kinds  # yours wins
    assert ("tensor_parallel_size", "default", "set") in kinds  # before **engine_kwargs: yours wins
    assert all(e.line > 0 for e in a.entries)
    s = assembly_of(str(verl_trees["0.9.1"].root), "sglang")
    assert {e.key for e in s.entries if e.kind == "pop"} == {
        "attention_backend",
        "mm_attention_backend",
        "custom_weight_loader",
    }
    assert dict(s.local_exprs)["infer_tp"] == "self.config.tensor_model_parallel_size * self.config.data_parallel_size"
    s71 = assembly_of(str(verl_trees["0.7.1"].root), "sglang")
    tp71 = next(e for e in s71.entries if e.key == "tp_size")
    assert (
        Evaluator(
            lambda p: {"tensor_model_parallel_size": 2, "data_parallel_size": 4}.get(p, Evaluator.MISSING),
            dict(s71.local_exprs),
        ).eval(tp71.value)
        == 8
    )


def test_bundled_fallback_is_the_091_reading(verl_trees, tmp_path):
    import yaml

    table = yaml.safe_load(
        (Path(__file__).resolve().parent.parent / "rules/engine_args/verl_assembly.yaml").read_text()
    )
    for engine in ("vllm", "sglang"):
        live = assembly_table(assembly_of(str(verl_trees["0.9.1"].root), engine), "verl 0.9.1")
        assert table[engine]["entries"] == live["entries"], (
            f"rerun scripts/make_engine_schemas.py --assembly for {engine}"
        )
    # a tree whose server module has an unrecognised shape falls back to the data and says so
    bogus = tmp_path / "verl" / "workers" / "rollout" / "vllm_rollout"
    bogus.mkdir(parents=True)
    (bogus / "vllm_async_server.py").write_text("def launch_server(self):\n    return None\n")
    fb = assembly_of(str(tmp_path), "vllm")
    assert not fb.from_source and "not recognised" in fb.origin and "0.9.1" in fb.origin
    assert {e.key for e in fb.entries} == {e.key for e in assembly_of(str(verl_trees["0.9.1"].root), "vllm").entries}
    assert read_assembly_source("x = 1\n", "vllm", "f.py") is None


def test_assembly_entries_as_the_messages_quote_them(verl_trees, tmp_path):
    # verl's conditions and values with `self.config.` written as the rollout section, a local
    # name with its definition, and the line (the bundled copy says it is one).
    a = assembly_of(str(verl_trees["0.7.1"].root), "vllm")
    ep = next(e for e in a.for_key("enable_expert_parallel") if e.overwrites)
    assert ep.condition_text(ACTOR) == f"{ACTOR}.expert_parallel_size > 1"
    assert a.where(ep.line) == f"{SERVER_FILES['vllm']}:{ep.line}"
    quant = next(e for e in a.for_key("quantization") if e.phase == "default")
    assert a.value_text(quant.value, ACTOR) == f"quantization = {ACTOR}.quantization"
    bogus = tmp_path / "verl" / "workers" / "rollout" / "vllm_rollout"
    bogus.mkdir(parents=True)
    (bogus / "vllm_async_server.py").write_text("x = 1\n")
    fb = assembly_of(str(tmp_path), "vllm")
    assert fb.where(7).startswith(f"{SERVER_FILES['vllm']}:7, bundled copy: data: the shape of")


def test_only_vllm_takes_a_unique_prefix_of_an_argument():
    names = snapshot("vllm").at("args", "0.12.0")
    assert accepts("vllm", "enable_prefix_cach", names)  # argparse's allow_abbrev
    assert not accepts("vllm", "enable", names)  # ambiguous
    assert not accepts("sglang", "enable_prefix_cach", names)  # ServerArgs(**args) takes exact keywords


def test_assembly_reader_on_a_synthetic_server():
    src = textwrap.dedent(
        """
        class Server:
            def _prep(self, kw):
                kw.setdefault("a", 1)
                if self.config.flag:
                    kw["b"] = 2

            def launch_server(self):
                engine_kwargs = self.config.get("engine_kwargs", {}).get("vllm", {}) or {}
                popped = engine_kwargs.pop("p", None) or {}
                self._prep(engine_kwargs)
                extra = {"d": 4}
                if self.config.n > 1:
                    extra["e"] = 5
                args = {"c": self.config.c, **engine_kwargs, "z": 0}
                args.update(extra)
                args["f"] = 6
        """
    )
    a = read_assembly_source(src, "vllm", "server.py")
    got = {(e.key, e.phase, e.kind, e.condition) for e in a.entries}
    assert got == {
        ("p", "pre", "pop", ()),
        ("a", "pre", "setdefault", ()),
        ("b", "pre", "set", ("self.config.flag",)),
        ("c", "default", "set", ()),
        ("z", "after", "set", ()),
        ("d", "after", "set", ()),
        ("e", "after", "set", ("self.config.n > 1",)),
        ("f", "after", "set", ()),
    }


# -------------------------------------------------------------- evaluator ----


def test_evaluator_three_valued():
    cfg = {"expert_parallel_size": 1, "tp": 4, "dp": 2, "mtp": {"enable": False}, "name": "vllm"}

    def lookup(path):
        node = cfg
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                return Evaluator.MISSING
            node = node[part]
        return node

    ev = Evaluator(lookup)
    assert ev.eval("self.config.expert_parallel_size > 1") is False
    assert ev.eval("self.config.tp * self.config.dp") == 8
    assert ev.eval("self.config.mtp.enable") is False
    assert ev.eval("self.config.get('limit_images', None)") is None
    assert ev.eval("self.nnodes > 1") is UNKNOWN
    assert ev.truth(["self.config.mtp is not None and self.config.mtp.enable", "self.nnodes > 1"]) is False
    assert ev.truth(["self.nnodes > 1"]) is None
    assert ev.truth([]) is True
    assert ev.eval("getattr(self.config, 'checkpoint_engine', None)") is None  # absent: the default
    assert ev.config_refs("self.replica_rank + self.config.get('seed', 0)") == ["seed"]
    ev2 = Evaluator(
        lambda p: Evaluator.MISSING,
        module={"_V": "version.parse(vllm.__version__)"},
        versions={"vllm": Version("0.11.0")},
    )
    assert ev2.eval("_V < version.parse('0.22.0')") is True


# ------------------------------------------------------------------ rules ----


def _dapo(tp: int | str = 4, dp: int | str = 2) -> str:
    return textwrap.dedent(
        f"""\
        #!/usr/bin/env bash
        gen_tp={tp}
        gen_dp={dp}
        python3 -m verl.trainer.main_ppo \\
            actor_rollout_ref.rollout.name=vllm \\
            actor_rollout_ref.rollout.tensor_model_parallel_size=${{gen_tp}} \\
            actor_rollout_ref.rollout.data_parallel_size=${{gen_dp}} \\
            +actor_rollout_ref.rollout.engine_kwargs.vllm.enable_expert_parallel=True \\
            trainer.n_gpus_per_node=8
        """
    )


def _only(report, prefix="VL7"):
    return [d for d in report.diagnostics if d.code.startswith(prefix)]


def test_dapo_expert_parallel_091(lint):
    [d] = _only(lint(_dapo(), "0.9.1"))
    assert d.code == "VL703" and str(d.severity) == "error"
    assert (d.span.line, d.span.col) == (8, 5)  # the override token
    assert "your True becomes False" in d.message and "vllm_async_server.py:402" in d.message
    assert "`actor_rollout_ref.rollout.expert_parallel_size=8`" in d.help


@pytest.mark.slow
def test_dapo_expert_parallel_071(lint):
    [d] = _only(lint(_dapo(2, 4), "0.7.1"))
    assert d.code == "VL704"
    assert (d.span.line, d.span.col) == (8, 5)
    assert "only when actor_rollout_ref.rollout.expert_parallel_size > 1" in d.message
    assert "`actor_rollout_ref.rollout.expert_parallel_size=8`" in d.help


def test_dapo_expert_parallel_unknown_sizes(lint):
    [d] = _only(lint(_dapo("$(nproc)", 2), "0.9.1"))
    assert d.code == "VL703"
    assert "expert_parallel_size=<tensor_model_parallel_size * data_parallel_size>" in d.help


def test_expert_parallel_set_the_verl_way_is_quiet(lint):
    script = _dapo().replace(
        "+actor_rollout_ref.rollout.engine_kwargs.vllm.enable_expert_parallel=True",
        "actor_rollout_ref.rollout.expert_parallel_size=8",
    )
    assert _only(lint(script, "0.9.1")) == []
    redundant = _dapo().replace(
        "trainer.n_gpus_per_node=8", "actor_rollout_ref.rollout.expert_parallel_size=8 trainer.n_gpus_per_node=8"
    )
    assert _only(lint(redundant, "0.9.1")) == []  # verl sets the same value


def _launch(*overrides: str) -> str:
    return (
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm "
        + " ".join(overrides)
        + "\n"
    )


def test_unknown_kwarg_by_vllm_version(lint):
    script = _launch(f"{EK}.vllm.cuda_graph_sizes=[1,2,4]")
    assert _only(lint(script, "0.9.1", versions={"vllm": "0.12.0"})) == []
    [d] = _only(lint(script, "0.9.1", versions={"vllm": "0.13.0"}))
    assert d.code == "VL701" and str(d.severity) == "error"
    assert "removed in vLLM 0.13.0" in d.message and "cudagraph_capture_sizes" in d.help
    # no flag: verl 0.9.1's wheel pins vllm==0.24.0, where the argument is gone: an error, saying why
    [d] = _only(lint(script, "0.9.1"))
    assert (
        d.code == "VL701"
        and str(d.severity) == "error"
        and "vllm==0.24.0 in verl-0.9.1.dist-info/METADATA" in d.message
    )
    # verl 0.7.1 declares vllm>=0.8.5,<=0.12.0: the argument exists from 0.9.2, so only 0.8.5 rejects it
    [d] = _only(lint(script, "0.7.1"))
    assert (
        str(d.severity) == "warning"
        and "on vLLM 0.8.5.post1, of the releases allowed by vllm<=0.12.0,>=0.8.5" in d.message
    )


def test_unknown_kwarg_typo_is_an_error_whatever_the_version(lint):
    [d] = _only(lint(_launch(f"{EK}.vllm.gpu_memory_utilisation=0.5"), "0.9.1"))
    assert d.code == "VL701" and str(d.severity) == "error"
    assert "gpu_memory_utilization" in d.help


def test_argparse_abbreviation_is_accepted(lint):
    assert _only(lint(_launch(f"{EK}.vllm.enable_prefix_cach=True"), "0.9.1")) == []  # unique prefix
    [d] = _only(lint(_launch(f"{EK}.vllm.kv_cache_dt=fp8"), "0.9.1"))  # ambiguous: argparse rejects it
    assert d.code == "VL701" and "kv_cache_dtype" in d.help


def test_unknown_false_flag_says_it_does_nothing(lint):
    [d] = _only(lint(_launch(f"{EK}.vllm.enable_frobnication=False"), "0.9.1"))
    assert d.code == "VL701" and "does nothing" in d.message


def test_sglang_tp_size_read_from_each_release(lint, verl_trees, composer, tmp_path):
    script = "#!/bin/bash\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=sglang actor_rollout_ref.rollout.tensor_model_parallel_size=2 actor_rollout_ref.rollout.data_parallel_size=2 actor_rollout_ref.rollout.expert_parallel_size=4 +actor_rollout_ref.rollout.engine_kwargs.sglang.tp_size=4\n"
    # 0.9.1 and 0.7.1 pass tp_size = TP * DP = 4: the same value, quiet
    assert _only(lint(script, "0.9.1")) == []
    assert _only(lint(script, "0.7.1")) == []
    # 0.7.0 passed tp_size = TP = 2: a mismatch
    from verl_lint.runner import lint_file
    from verl_lint.runs import Options

    tree = verl_trees["0.7.0"]
    path = tmp_path / "sg.sh"
    path.write_text(script)
    [d] = _only(lint_file(path, Options(verl_tree=tree), composer))
    assert d.code == "VL702" and "= 2" in d.message and "async_sglang_server.py:160" in d.message


def test_conditional_overwrite_unknown_condition_is_a_warning(lint):
    [d] = _only(lint(_launch(f"{EK}.vllm.fully_sharded_loras=True"), "0.9.1"))
    assert d.code == "VL703" and str(d.severity) == "warning" and "may have no effect" in d.message


def test_limit_mm_per_prompt_alone_is_fine(lint):
    assert _only(lint(_launch(f"{EK}.vllm.limit_mm_per_prompt.image=4"), "0.7.1")) == []
    # limit_images is a RolloutConfig field without a YAML default: added with +
    [d] = _only(
        lint(_launch("+actor_rollout_ref.rollout.limit_images=2", f"{EK}.vllm.limit_mm_per_prompt.image=4"), "0.7.1")
    )
    assert d.code == "VL703" and "limit_images" in d.help


def test_popped_kwargs_are_honoured(lint):
    assert _only(lint(_launch(f"{EK}.vllm.compilation_config.cudagraph_mode=PIECEWISE"), "0.9.1")) == []
    sg = "#!/bin/bash\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=sglang +actor_rollout_ref.rollout.engine_kwargs.sglang.attention_backend=fa3\n"
    assert _only(lint(sg, "0.9.1")) == []


@pytest.mark.slow
def test_no_engine_package_is_imported(tmp_path):
    """The static path never imports vllm, sglang, verl or torch."""
    script = tmp_path / "run.sh"
    script.write_text(_dapo() + "export VLLM_ATTENTION_BACKEND=XFORMERS\n")
    code = textwrap.dedent(
        f"""
        import sys
        from verl_lint.config.compose import Composer
        from verl_lint.launch.locate import release_tree
        from verl_lint.runs import Options
        from verl_lint.runner import lint_file
        from pathlib import Path
        rep = lint_file(Path({str(script)!r}), Options(verl_tree=release_tree("0.9.1")), Composer(cache=False))
        assert any(d.code == "VL703" for d in rep.diagnostics), rep.diagnostics
        bad = sorted(m for m in sys.modules if m.split(".")[0] in ("vllm", "sglang", "vllm_ascend", "verl", "torch"))
        print("IMPORTED", bad)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "IMPORTED []" in out.stdout


def test_assembly_disk_cache_roundtrip(verl_trees, tmp_path, monkeypatch):
    root = str(verl_trees["0.9.1"].root)
    fresh = read_assembly_source(Path(root, SERVER_FILES["vllm"]).read_text(), "vllm", SERVER_FILES["vllm"])
    monkeypatch.setenv("VERL_LINT_CACHE_DIR", str(tmp_path))
    assembly_of.cache_clear()
    try:
        first = assembly_of(root, "vllm")  # parsed, then written to <cache>/engine_args
        assert list((tmp_path / "engine_args").glob("*.pickle"))
        assembly_of.cache_clear()
        second = assembly_of(root, "vllm")  # read back from disk
        assert first == second == fresh
    finally:
        assembly_of.cache_clear()


def test_make_engine_schemas_script(wheel, tmp_path):
    """The generator reads a real wheel (from the shared cache) and writes the bundled format."""
    wheel("vllm-ascend", "0.9.1")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    try:
        import make_engine_schemas
    finally:
        sys.path.pop(0)
    assert make_engine_schemas.main(["--engine", "vllm_ascend", "--versions", "0.9.1", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "vllm_ascend.yaml").read_text()
    made = Snapshot.from_table(schemas._read_snapshot_text(text))
    assert made.versions == ("0.9.1",)
    assert made.names_at("0.9.1") == snapshot("vllm_ascend").names_at("0.9.1")
    assert fetch_wheel("vllm-ascend", "0.9.1").is_file()  # a wheel that was already cached is kept


def test_a_dict_kwarg_set_field_by_field_is_the_users(lint):
    """`+...engine_kwargs.vllm.X.y=1` sets X's fields, not X: still the user's choice (not verl's
    default), reported on the script at the override that set it."""
    script = "#!/bin/bash\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm \\\n  +actor_rollout_ref.rollout.engine_kwargs.vllm.bogus_config.mode=1\n"
    [d] = _only(lint(script, "0.9.1"))
    assert (d.code, str(d.severity), d.span.line, d.span.col) == ("VL701", "error", 3, 3)
    assert not d.message.startswith("in verl's own default config")
