"""The Hydra callback: a real @hydra.main app (tests/apps/lint_app.py) on real verl configs.

The app runs in a subprocess with the callback enabled from the command line; its task
function writes a marker file, so "the job was stopped before the task ran" is checked
by the marker's absence. In-process tests cover `lint_config`, the adapter both use.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import hydra
import pytest
from conftest import NEWEST, across_releases
from omegaconf import OmegaConf

from verl_lint.callback import ENABLE_LINE, VerlLintCallback
from verl_lint.live import lint_config
from verl_lint.model import Diagnostic, Severity
from verl_lint.registry import REGISTRY, ROLLOUT_NAME, Rule

APPS = Path(__file__).resolve().parent / "apps"
BAD = ["data.train_batch_size=1000", "actor_rollout_ref.rollout.n=5", "trainer.nnodes=6"]  # VL301 on 0.9.1 and 0.7.1
GOOD = [
    "data.train_batch_size=960",
    "actor_rollout_ref.rollout.n=5",
    "trainer.nnodes=6",
    "actor_rollout_ref.actor.ppo_mini_batch_size=192",
]
CB = "+hydra.callbacks.verl_lint"
# What the engine_kwargs / VLLM_* rules load on first use (registry.lazy_module), not at job start.
ENGINE_MODULES = {f"verl_lint.engines.{m}" for m in ("schemas", "assembly", "expressions", "pysource")}


def config_dir(tree) -> Path:
    return tree.root / "verl" / "trainer" / "config"


def run_app(
    tmp_path: Path,
    tree,
    *args: str,
    app: str = "lint_app.py",
    config_name: str = "ppo_trainer",
    cdir: Path | None = None,
    name_rollout: bool = True,
):
    """Run the test app; returns (CompletedProcess, marker dict or None)."""
    marker = tmp_path / "marker.json"
    if marker.exists():
        marker.unlink()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VLLM_", "SGLANG_"))}
    # The verl release is importable (as in a real launch) but must not be imported.
    env["PYTHONPATH"] = os.pathsep.join([str(APPS), str(tree.root)])
    env["LINT_APP_MARKER"] = str(marker)
    env.pop("HYDRA_FULL_ERROR", None)
    cmd = [
        sys.executable,
        str(APPS / app),
        "--config-dir",
        str(cdir or config_dir(tree)),
        "--config-name",
        config_name,
        f"hydra.run.dir={tmp_path / 'out'}",
        *args,
    ]
    if (
        name_rollout
        and config_name in ("ppo_trainer", "ppo_megatron_trainer", "my_job")
        and not any("rollout.name=" in a for a in args)
    ):
        cmd.append(ROLLOUT_NAME)  # verl >= 0.7 requires it (`name: ???`): as real launches do
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    data = json.loads(marker.read_text()) if marker.exists() else None
    return proc, data


def output(proc) -> str:
    return proc.stdout + proc.stderr


# ---------------------------------------------------------- subprocess ----


def test_enable_line_is_the_documented_one():
    assert ENABLE_LINE == "+hydra.callbacks.verl_lint._target_=verl_lint.callback.VerlLintCallback"
    from hydra.experimental.callback import Callback

    assert issubclass(VerlLintCallback, Callback)


@pytest.mark.slow
def test_a_mandatory_value_left_unset_stops_the_job(tmp_path, verl_trees):
    """The live config still holds `name: ???` (Hydra only raises when the worker reads it): the
    callback stops the job at start-up, before Ray and the workers."""
    proc, marker = run_app(tmp_path, verl_trees[NEWEST], ENABLE_LINE, *GOOD, name_rollout=False)
    out = output(proc)
    assert proc.returncode == 1 and marker is None, out
    assert "verl-lint: stopped the job before it started" in proc.stderr
    assert (
        "VL109 [error] actor_rollout_ref.rollout.name\n" in proc.stderr
        and "is mandatory (`???` in verl" in proc.stderr
        and "Traceback" not in out
    )


@pytest.mark.slow
@pytest.mark.parametrize("version", across_releases())
def test_bad_config_stops_the_job_before_the_task(tmp_path, verl_trees, version):
    proc, marker = run_app(tmp_path, verl_trees[version], ENABLE_LINE, *BAD)
    out = output(proc)
    assert proc.returncode == 1, out
    assert marker is None, "the task function ran"
    assert "TASK RAN" not in proc.stdout
    assert "verl-lint: stopped the job before it started" in proc.stderr
    assert "VL301 [error]" in proc.stderr
    assert "from the command line: `" in proc.stderr
    assert "help: " in proc.stderr
    assert "Traceback" not in out


@pytest.mark.slow
@pytest.mark.parametrize(
    "version",
    across_releases(fails_on_oldest="on verl 0.5.0 a clean job loads the engine modules and difflib (issue #19)"),
)
def test_clean_job_runs_and_imports_nothing_heavy(tmp_path, verl_trees, version):
    proc, marker = run_app(tmp_path, verl_trees[version], ENABLE_LINE, *GOOD)
    out = output(proc)
    assert proc.returncode == 0, out
    assert marker is not None and marker["ran"] and marker["train_batch_size"] == 960
    # torch is installed here and verl is on PYTHONPATH: neither may be imported by the callback.
    assert marker["heavy_modules"] == [], marker["heavy_modules"]
    assert "verl-lint" in out and "stopped the job" not in out
    # What only some launches need stays unloaded on a clean job without VLLM_* variables or
    # engine_kwargs (the callback's start-up cost is mostly imports).
    _, plain = run_app(tmp_path, verl_trees[version], *GOOD)
    added = set(marker["modules"]) - set(plain["modules"])
    assert "verl_lint.callback" in added
    # The reference-worker rules (VL222, VL303/VL315) decide the entry point's RefPolicy condition
    # at job start (rules/roles.py), with the expression evaluator: allowed, the rest stays lazy.
    decide = {"verl_lint.engines.expressions", "verl_lint.engines.pysource", "packaging.specifiers"}
    lazy = (
        ENGINE_MODULES
        | {
            "verl_lint.engines.wheels",
            "verl_lint.shell",
            "packaging.specifiers",
            "importlib.metadata",
            "difflib",
            "subprocess",
        }
    ) - decide
    lazy.add("verl_lint.settings")  # only a bad parameter needs its messages
    lazy.add("huggingface_hub")  # only for a model found in the Hugging Face cache (models.py)
    assert not added & lazy, sorted(added & lazy)


@pytest.mark.slow
def test_engine_modules_load_when_a_launch_sets_engine_kwargs(tmp_path, verl_trees):
    # The other half of the check above: the modules it expects unloaded are the ones the
    # engine_kwargs rules load on need (a renamed module cannot make that check pass vacuously).
    kwarg = "+actor_rollout_ref.rollout.engine_kwargs.vllm.kv_cache_dtype=fp8"
    proc, marker = run_app(tmp_path, verl_trees[NEWEST], ENABLE_LINE, *GOOD, kwarg)
    assert proc.returncode == 0 and marker is not None, output(proc)
    assert ENGINE_MODULES <= set(marker["modules"]), sorted(ENGINE_MODULES - set(marker["modules"]))


@pytest.mark.slow
def test_fail_on_never_logs_warnings_and_runs(tmp_path, verl_trees):
    proc, marker = run_app(tmp_path, verl_trees[NEWEST], ENABLE_LINE, f"{CB}.fail_on=never", *BAD)
    out = output(proc)
    assert proc.returncode == 0, out
    assert marker is not None
    warning = next(line for line in out.splitlines() if "VL301" in line)
    assert "[WARNING]" in warning and "help:" in warning, warning
    closing = out.splitlines()[[i for i, line in enumerate(out.splitlines()) if "verl-lint: " in line][-1]]
    assert re.search(r"verl-lint: \d+ finding\(s\), none blocks the job \(fail_on=never\) \(\d+\.\d ms\)$", closing)


@pytest.mark.slow
def test_fail_on_warning_is_stricter(tmp_path, verl_trees):
    # A conflicting duplicate override is a warning (VL107): it blocks only at fail_on=warning.
    dup = ["trainer.nnodes=1", "trainer.nnodes=2"]
    proc, marker = run_app(tmp_path, verl_trees[NEWEST], ENABLE_LINE, *dup)
    assert proc.returncode == 0 and marker is not None, output(proc)
    proc, marker = run_app(tmp_path, verl_trees[NEWEST], ENABLE_LINE, f"{CB}.fail_on=warning", *dup)
    assert proc.returncode == 1 and marker is None, output(proc)
    assert "VL107 [warning]" in proc.stderr


@pytest.mark.slow
def test_report_path_and_select_ignore(tmp_path, verl_trees):
    report = tmp_path / "reports" / "lint.json"
    args = [ENABLE_LINE, f"{CB}.fail_on=never", f"{CB}.report_path={report}", *BAD]
    proc, marker = run_app(tmp_path, verl_trees[NEWEST], *args)
    assert proc.returncode == 0, output(proc)
    items = json.loads(report.read_text())
    vl301 = next(i for i in items if i["code"] == "VL301")
    assert vl301["path"] == "<command line>" and vl301["severity"] == "error"
    # Located at the argument that set its key: argv is app, --config-dir D, --config-name N, hydra.run.dir=..., args.
    setter = next(a for a in BAD if a.startswith(vl301["key"] + "="))
    assert (vl301["argument"], vl301["line"]) == (6 + args.index(setter), 7 + args.index(setter))
    # select=[VL1] leaves the size rules out: the bad job runs; ignore="VL301,VL304" likewise.
    proc, marker = run_app(tmp_path, verl_trees[NEWEST], ENABLE_LINE, f"{CB}.select=[VL1]", *BAD)
    assert proc.returncode == 0 and marker is not None, output(proc)
    proc, marker = run_app(tmp_path, verl_trees[NEWEST], ENABLE_LINE, f"{CB}.ignore='VL301,VL304'", *BAD)
    assert proc.returncode == 0 and marker is not None, output(proc)


@pytest.mark.slow
def test_callback_from_the_primary_config(tmp_path, verl_trees):
    tree = verl_trees[NEWEST]
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "my_job.yaml").write_text(
        "defaults:\n  - ppo_trainer\n  - _self_\n\n"
        "hydra:\n  searchpath:\n    - file://" + str(config_dir(tree)) + "\n"
        "  callbacks:\n    verl_lint:\n      _target_: verl_lint.callback.VerlLintCallback\n      fail_on: error\n"
    )
    proc, marker = run_app(tmp_path, tree, *BAD, cdir=conf, config_name="my_job")
    assert proc.returncode == 1 and marker is None, output(proc)
    # Rules read the config's content, not its name: validate_config's VL301 runs for my_job too.
    assert "VL301 [error]" in proc.stderr and "VL304 [error]" in proc.stderr, output(proc)
    proc, marker = run_app(tmp_path, tree, *GOOD, cdir=conf, config_name="my_job")
    assert proc.returncode == 0 and marker is not None, output(proc)


SIZES = [
    "data.train_batch_size=60",
    "actor_rollout_ref.actor.ppo_mini_batch_size=64",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=3",
    "actor_rollout_ref.actor.ppo_micro_batch_size=8",
    "actor_rollout_ref.rollout.tensor_model_parallel_size=3",
    "trainer.n_gpus_per_node=8",
    "actor_rollout_ref.rollout.name=vllm",
]


@pytest.mark.slow
def test_a_project_config_of_only_verls_defaults_list_gets_ppo_trainers_findings(tmp_path, verl_trees):
    """The layout the README recommends (a `my_grpo.yaml` whose content is `defaults: [ppo_trainer,
    _self_]` and a search path to verl's config): the job gets the findings the same overrides get
    on ppo_trainer itself, each at the same argument. (The search path is `file://` here: Hydra
    imports the package of a `pkg://` one, and verl's package needs its own dependencies.)"""
    tree = verl_trees[NEWEST]
    conf = tmp_path / "config"
    conf.mkdir()
    (conf / "my_grpo.yaml").write_text(
        f"hydra:\n  searchpath:\n    - file://{config_dir(tree)}\ndefaults:\n  - ppo_trainer\n  - _self_\n"
    )
    reports = {}
    for name, cdir in (("my_grpo", conf), ("ppo_trainer", None)):
        report = tmp_path / f"{name}.json"
        args = (ENABLE_LINE, f"{CB}.fail_on=never", f"{CB}.report_path={report}", *SIZES)
        proc, marker = run_app(tmp_path, tree, *args, cdir=cdir, config_name=name, name_rollout=False)
        assert proc.returncode == 0 and marker is not None, output(proc)
        reports[name] = sorted(
            (i["code"], i["severity"], i["key"], i["argument"]) for i in json.loads(report.read_text())
        )
    assert reports["my_grpo"] == reports["ppo_trainer"]
    assert {"VL301", "VL302", "VL303", "VL315"} <= {code for code, *_ in reports["my_grpo"]}, reports


# ------------------------------------------------------------ fail-open ----


@pytest.mark.slow
def test_a_rule_that_raises_does_not_stop_the_job(tmp_path, verl_trees):
    # tests/apps/boom_rule.py registers VL999 through the public REGISTRY; its check raises.
    proc, marker = run_app(tmp_path, verl_trees[NEWEST], ENABLE_LINE, f"{CB}.plugins=[boom_rule]", *GOOD)
    out = output(proc)
    assert proc.returncode == 0, out
    assert marker is not None
    lines = [line for line in out.splitlines() if "boom rule exploded" in line]
    assert len(lines) == 1 and "RuntimeError" in lines[0] and "VL999" in lines[0], out
    assert "Traceback" not in out


@pytest.mark.slow
def test_a_raising_rule_does_not_disable_the_others(tmp_path, verl_trees):
    proc, marker = run_app(tmp_path, verl_trees[NEWEST], ENABLE_LINE, f"{CB}.plugins=[boom_rule]", *BAD)
    assert proc.returncode == 1 and marker is None, output(proc)
    assert "VL301" in proc.stderr and "boom rule exploded" in output(proc)


@pytest.mark.slow
def test_strict_stops_on_an_internal_error(tmp_path, verl_trees):
    proc, marker = run_app(
        tmp_path, verl_trees[NEWEST], ENABLE_LINE, f"{CB}.plugins=[boom_rule]", f"{CB}.strict=true", *GOOD
    )
    assert proc.returncode == 2, output(proc)
    assert marker is None
    assert "strict=true" in proc.stderr and "RuntimeError: boom rule exploded" in proc.stderr


@pytest.mark.slow
def test_a_broken_plugin_fails_open(tmp_path, verl_trees):
    proc, marker = run_app(tmp_path, verl_trees[NEWEST], ENABLE_LINE, f"{CB}.plugins=[no_such_plugin_module]", *GOOD)
    assert proc.returncode == 0 and marker is not None, output(proc)
    assert "ModuleNotFoundError" in output(proc)


# --------------------------------------------------------- bad settings ----

UNSET = "${oc.env:VERL_LINT_TEST_UNSET_VAR}"


@pytest.mark.slow
@pytest.mark.parametrize(
    "value, runs", [("'false'", True), ("no", True), ("0", True), ("false", True), ("'yes'", False)]
)
def test_strict_given_as_a_string(tmp_path, verl_trees, value, runs):
    # `strict='false'` reaches the callback as the string 'false' (Hydra's grammar: `false` is a
    # bool, `0` an int, `no` and a quoted value strings); bool('false') would be True.
    proc, marker = run_app(
        tmp_path, verl_trees[NEWEST], ENABLE_LINE, f"{CB}.plugins=[boom_rule]", f"{CB}.strict={value}", *GOOD
    )
    out = output(proc)
    if runs:
        assert proc.returncode == 0 and marker is not None, out
        assert "boom rule exploded; skipped it, the job continues" in out
    else:
        assert proc.returncode == 2 and marker is None, out
        assert "stopping the job (strict=true)" in proc.stderr


@pytest.mark.parametrize(
    "setting, says",
    [
        ("fail_on=errors", 'fail_on="errors": must be one of error, warning, info, never; did you mean "error"?'),
        ("select=[VL30l,VL1]", 'select: unknown rule code or name "VL30l"'),
        (
            "ignore=unknown-config-keys",
            'ignore: unknown rule code or name "unknown-config-keys"; did you mean "unknown-config-key"?',
        ),
        ("strict=maybe", 'strict="maybe": must be true or false'),
    ],
)
@pytest.mark.slow
def test_a_bad_setting_is_one_warning_and_the_job_runs(tmp_path, verl_trees, setting, says):
    proc, marker = run_app(tmp_path, verl_trees[NEWEST], ENABLE_LINE, f"{CB}.{setting}", *GOOD)
    out = output(proc)
    assert proc.returncode == 0 and marker is not None, out
    lines = [line for line in out.splitlines() if "bad setting" in line]
    assert len(lines) == 1 and says in lines[0] and "[WARNING]" in lines[0], out
    assert "the job continues (strict=true would stop it)" in lines[0]
    assert "Traceback" not in out and "Error in call to target" not in out


@pytest.mark.slow
def test_a_bad_fail_on_does_not_block_on_findings(tmp_path, verl_trees):
    # The intended threshold is unknown: the findings are logged and the job runs.
    proc, marker = run_app(tmp_path, verl_trees[NEWEST], ENABLE_LINE, f"{CB}.fail_on=nevr", *BAD)
    out = output(proc)
    assert proc.returncode == 0 and marker is not None, out
    assert 'did you mean "never"?' in out and "VL301 [error]" in out


@pytest.mark.slow
@pytest.mark.parametrize("setting", ["fail_on=errors", "select=[VL30l]"])
def test_a_bad_setting_with_strict_stops_the_job_in_one_line(tmp_path, verl_trees, setting):
    proc, marker = run_app(tmp_path, verl_trees[NEWEST], ENABLE_LINE, f"{CB}.{setting}", f"{CB}.strict=true", *GOOD)
    out = output(proc)
    assert proc.returncode == 2 and marker is None, out
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, out
    assert lines[0].startswith("verl-lint: bad setting ") and lines[0].endswith("Stopping the job (strict=true)"), (
        lines[0]
    )


@pytest.mark.slow
@pytest.mark.parametrize("override", [f"+foo={UNSET}", f"trainer.project_name={UNSET}"])
def test_an_unresolvable_override_leaves_the_other_rules_running(tmp_path, verl_trees, override):
    proc, marker = run_app(tmp_path, verl_trees[NEWEST], ENABLE_LINE, override, *BAD)
    out = output(proc)
    assert proc.returncode == 1 and marker is None, out
    assert "VL301 [error]" in proc.stderr
    assert "internal error" not in out and "skipped" not in out


@pytest.mark.slow
def test_an_unresolvable_value_is_unknown_only_to_the_rules_that_read_it(tmp_path, verl_trees):
    # VL301 needs train_batch_size, now unknown: silent. VL304 reads the mini-batch: still stops the job.
    bad = [f"data.train_batch_size={UNSET}", "actor_rollout_ref.rollout.n=5", "trainer.nnodes=6"]
    proc, marker = run_app(tmp_path, verl_trees[NEWEST], ENABLE_LINE, *bad)
    out = output(proc)
    assert proc.returncode == 1 and marker is None, out
    assert "VL304 [error]" in proc.stderr and "VL301" not in proc.stderr
    assert "internal error" not in out


@pytest.mark.slow
def test_hydra_swallows_exceptions_from_callbacks(tmp_path, verl_trees):
    """Why the callback aborts with SystemExit: Hydra 1.3 turns a callback's Exception into a warning."""
    assert hydra.__version__.startswith("1.3"), hydra.__version__
    proc, marker = run_app(
        tmp_path, verl_trees[NEWEST], "+hydra.callbacks.raising._target_=raising_callback.RaisingCallback", *GOOD
    )
    assert proc.returncode == 0, output(proc)
    assert marker is not None, "the job ran despite the exception"
    assert "Callback RaisingCallback.on_job_start raised RuntimeError: callback said stop" in proc.stderr


# ----------------------------------------------------------- in process ----


@pytest.fixture
def composed(verl_trees):
    """compose(overrides) -> the config Hydra hands on_job_start (with the `hydra` node)."""
    from hydra import compose, initialize_config_dir

    def make(*overrides: str, version: str = NEWEST):
        with initialize_config_dir(
            config_dir=str(config_dir(verl_trees[version])), version_base=None, job_name="lint_app"
        ):
            return compose("ppo_trainer", overrides=[*overrides, ROLLOUT_NAME], return_hydra_config=True)

    return make


def test_lint_config_locates_overrides_on_the_command_line(composed):
    cfg = composed(*BAD)
    before = OmegaConf.to_yaml(cfg)
    argv = ["main_ppo.py", *BAD, ROLLOUT_NAME]
    diags = lint_config(cfg, env={}, argv=argv)
    d = next(d for d in diags if d.code == "VL301")
    setter = d.message.split("(from the command line: `")[1].split("`")[0]
    assert setter in BAD
    assert (d.span.path, d.span.line, d.span.col, d.span.end_col) == (
        "<command line>",
        argv.index(setter) + 1,
        1,
        len(setter) + 1,
    )
    # Not on the command line given (a job started from code): the command line as a whole.
    assert {x.span.line for x in lint_config(cfg, env={}, argv=["main_ppo.py"])} == {1}
    # The config handed in is untouched: same content, the `hydra` node and every parent link intact.
    assert OmegaConf.to_yaml(cfg) == before
    assert "hydra" in cfg
    for k in cfg.keys():
        assert cfg._get_node(k)._get_parent() is cfg


def test_lint_config_clean_and_without_hydra_node(composed, verl_trees):
    assert [d.code for d in lint_config(composed(*GOOD), env={})] == []
    job = composed(*BAD)
    from omegaconf import open_dict

    with open_dict(job):
        del job["hydra"]
    # Without the hydra node: overrides, config name and the app's file (its verl tree) passed explicitly.
    main = str(verl_trees[NEWEST].root / "verl" / "trainer" / "main_ppo.py")
    assert "VL301" in [d.code for d in lint_config(job, BAD, {}, config_name="ppo_trainer", task_file=main)]
    assert "VL301" in [d.code for d in lint_config(job, BAD, {}, task_file=main)], (
        "rules read the config's content, not its name"
    )
    # No verl tree known (no file, no config dir, none installed): rules that mirror verl's source do not apply.
    assert "VL301" not in [d.code for d in lint_config(job, BAD, {}, config_name="ppo_trainer")]


def test_lint_config_env_and_provenance(composed):
    seen = {}

    def check(ctx):
        seen["env"] = dict(ctx.env)
        seen["nnodes"] = ctx.get("trainer.nnodes")
        yield ctx.diag("VL998", "env finding", key="MY_VAR", span=ctx.env["MY_VAR"].span)
        yield ctx.diag("VL998", "default finding", key="actor_rollout_ref.actor.ppo_epochs")
        yield ctx.diag("VL998", "primary finding", key="trainer.total_epochs")

    REGISTRY.register(Rule("VL998", "test-env-probe", Severity.WARNING, "A probe (test).", check))
    try:
        cfg = composed("+ray_kwargs.ray_init.runtime_env.env_vars.RAY_ONLY=7", "trainer.nnodes=1")
        diags = lint_config(cfg, env={"MY_VAR": "1"}, select=["VL998"])
    finally:
        REGISTRY.unregister("VL998")
    assert seen["nnodes"] == 1
    assert seen["env"]["MY_VAR"].value == "1" and seen["env"]["MY_VAR"].span.path == "<environment>"
    ray = seen["env"]["RAY_ONLY"]
    assert ray.value == "7" and ray.span.path == "<command line>" and ray.span.col == 1
    by_msg = {d.message.split(" (")[0]: d for d in diags}
    assert set(by_msg) == {"env finding", "default finding", "primary finding"}
    assert by_msg["env finding"].message.endswith("(from the environment)")
    assert by_msg["default finding"].message.endswith("(default from actor/dp_actor.yaml)")
    assert by_msg["primary finding"].message.endswith("(default from ppo_trainer.yaml)")


def test_callback_in_process_blocks_with_systemexit(composed, capsys, tmp_path):
    cfg = composed(*BAD)
    cb = VerlLintCallback(report_path=str(tmp_path / "r.json"))
    with pytest.raises(SystemExit) as ex:
        cb.on_job_start(cfg, task_function=lambda c: None)
    assert ex.value.code == 1
    err = capsys.readouterr().err
    assert "VL301 [error] " in err and "Traceback" not in err
    assert any(i["code"] == "VL301" for i in json.loads((tmp_path / "r.json").read_text()))
    VerlLintCallback(fail_on="never").on_job_start(cfg, task_function=lambda c: None)  # no exception
    # A bad parameter does not raise (Hydra would stop the launch on it): it is kept for on_job_start.
    cb = VerlLintCallback(fail_on="sometimes", strict="nope")
    assert (cb.fail_on, cb.strict) == ("never", False)
    assert [p.split("=")[0] for p, _ in cb.problems] == ["strict", "fail_on"]


def test_the_lint_leaves_the_collector_as_it_was(composed, capsys):
    """The job-start lint runs with the collector paused (a collection landing in it walks the
    whole job's heap, ~25 ms, more than the lint: bench/callback_overhead.py measures it); the
    job gets the collector back as it had it, enabled or not, also when the callback stops it."""
    import gc

    good, bad = composed(*GOOD), composed(*BAD)
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            VerlLintCallback(fail_on="never").on_job_start(good, task_function=None)
            assert gc.isenabled() == enabled
            with pytest.raises(SystemExit):
                VerlLintCallback().on_job_start(bad, task_function=None)
            assert gc.isenabled() == enabled
    finally:
        gc.enable()
    capsys.readouterr()


def test_live_findings_are_merged_and_filtered(composed, monkeypatch):
    import verl_lint.live as cbmod

    live = Diagnostic(
        "VL651", "allocator-api-missing", Severity.ERROR, "live finding", cbmod_span(), key="PYTORCH_CUDA_ALLOC_CONF"
    )
    monkeypatch.setattr(cbmod, "live_findings", lambda *a, **k: [live])
    cfg = composed(*GOOD)
    with pytest.raises(SystemExit):
        VerlLintCallback().on_job_start(cfg, task_function=None)
    VerlLintCallback(ignore="VL651").on_job_start(cfg, task_function=None)  # filtered: runs
    monkeypatch.setattr(
        cbmod, "live_findings", lambda *a, **k: (_ for _ in ()).throw(ImportError("half-written runtime"))
    )
    cb = VerlLintCallback()
    cb.on_job_start(cfg, task_function=None)  # fails open
    assert cb.skipped == ["live allocator check"]


def test_a_lint_core_that_cannot_load_fails_open_or_stops_when_strict(composed, monkeypatch):
    """The lint core is imported when the job starts; a broken installation is one warning and
    the job runs, or (strict) exit 2 — never an exception left to Hydra."""
    monkeypatch.setitem(sys.modules, "verl_lint.live", None)  # `import` now raises ImportError
    cfg = composed(*BAD)
    cb = VerlLintCallback()
    cb.on_job_start(cfg, task_function=None)
    assert cb.skipped == ["lint core"] and cb.diagnostics == []
    with pytest.raises(SystemExit) as ex:
        VerlLintCallback(strict=True).on_job_start(cfg, task_function=None)
    assert ex.value.code == 2


def cbmod_span():
    from verl_lint.model import Span

    return Span("<runtime>", 1, 1, 1, 1)


def test_override_keys_and_kinds_agree_with_hydras_parser():
    """The callback reads key and kind from the override text (Hydra parsed it already); on
    every override form Hydra accepts that must agree with Hydra's own parser."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from verl_lint.config.compose import override_kind
    from verl_lint.live import _applied

    lines = [
        "trainer.nnodes=2",
        "+trainer.new_key=1",
        "++trainer.nnodes=3",
        "~trainer.logger",
        "~trainer.logger=[console]",
        "actor@actor_rollout_ref.actor=dp_actor",
        "+actor@actor_rollout_ref.actor=dp_actor",
        "data.train_files='/a=b/train.parquet'",
        "trainer.logger=[console,wandb]",
        "+ray_kwargs.ray_init.runtime_env={env_vars:{A:'1'}}",
        "hydra.run.dir=/tmp/x",
        "hydra/job_logging=disabled",
        "trainer.experiment_name=",
        "critic.optim.lr=${actor_rollout_ref.actor.optim.lr}",
    ]
    choices = {"actor@actor_rollout_ref.actor": "dp_actor"}
    got = _applied(lines, choices, ["app.py", *lines])
    assert [o.word.span.line for o in got] == list(range(2, len(lines) + 2))  # argument N is line N + 1
    parsed = OverridesParser.create().parse_overrides(lines)
    for line, o, p in zip(lines, got, parsed):
        kind = override_kind(p)
        key_element = f"{p.key_or_group}@{p.package}" if p.package else p.key_or_group  # without +/~
        if (
            kind != "hydra"
            and not isinstance(p.value(), dict)
            and (key_element in choices or p.key_or_group in choices)
        ):
            kind = "group"
        assert (o.key, o.kind) == (p.key_or_group, kind), line
        assert o.word.text == line


@pytest.mark.slow
@pytest.mark.parametrize(
    "code, override, says",
    [
        ("VL230", "+trainer.no_such_knob=1", "no_such_knob"),  # an index of the whole verl tree (~35 ms at job start)
        (
            "VL233",
            "algorithm.kl_ctrl.kl_coef=0.01",
            "use_kl_in_reward",
        ),  # the code around each read of a set key, parsed
    ],
)
def test_rules_reading_the_whole_tree_are_checked_only_when_selected(tmp_path, verl_trees, code, override, says):
    """VL230/VL231 and VL233 read the whole verl tree, VL108/VL110 verl's config classes: opt-in here."""
    proc, marker = run_app(tmp_path, verl_trees[NEWEST], ENABLE_LINE, f"{CB}.fail_on=warning", override)
    assert proc.returncode == 0 and marker is not None and code not in output(proc), output(proc)
    proc, marker = run_app(
        tmp_path, verl_trees[NEWEST], ENABLE_LINE, f"{CB}.fail_on=warning", f"{CB}.select=[{code}]", override
    )
    assert proc.returncode == 1 and marker is None, output(proc)
    assert f"{code} [warning]" in proc.stderr and says in proc.stderr


@pytest.mark.slow
def test_config_class_rules_are_checked_only_when_selected(tmp_path, verl_trees):
    knob = "+actor_rollout_ref.actor.no_such_knob=1"
    proc, marker = run_app(tmp_path, verl_trees[NEWEST], ENABLE_LINE, knob)
    assert proc.returncode == 0 and marker is not None and "VL110" not in output(proc), output(proc)
    proc, marker = run_app(tmp_path, verl_trees[NEWEST], ENABLE_LINE, f"{CB}.select=[VL110]", knob)
    assert proc.returncode == 1 and marker is None, output(proc)
    assert "VL110 [error]" in proc.stderr and "FSDPActorConfig" in proc.stderr


@pytest.mark.slow
def test_a_project_config_files_values_are_reported_at_their_yaml_lines(tmp_path, verl_trees):
    """The job's primary config is the project's own: its findings name the YAML line, not the command line."""
    tree = verl_trees[NEWEST]
    conf = tmp_path / "config"
    conf.mkdir()
    (conf / "my_grpo.yaml").write_text(
        f"hydra:\n  searchpath:\n    - file://{config_dir(tree)}\n"
        "defaults:\n  - ppo_trainer\n  - _self_\n"
        "algorithm:\n  kl_ctrl:\n    kl_coef: 0.01\n"
        "actor_rollout_ref:\n  rollout:\n    name: vllm\n    tensor_parallel_size: 2\n"
    )
    args = (ENABLE_LINE, f"{CB}.select=[VL110,VL233]", f"{CB}.fail_on=warning")
    proc, data = run_app(tmp_path, tree, *args, cdir=conf, config_name="my_grpo", name_rollout=False)
    assert proc.returncode != 0 and data is None, output(proc)
    text = output(proc)
    assert re.search(r"VL233 \[warning\] algorithm\.kl_ctrl\.kl_coef  at \S*config/my_grpo\.yaml:9:5", text), text
    assert re.search(
        r"VL110 \[error\] actor_rollout_ref\.rollout\.tensor_parallel_size  at \S*config/my_grpo\.yaml:13:5", text
    ), text
    assert "(default from" not in text
