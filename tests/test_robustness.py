"""Static-only guarantee, bad input, bounded resources, fuzzing."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import EXAMPLES, NEWEST
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cli import cli

from verl_lint.config.compose import Composer
from verl_lint.runner import lint_file
from verl_lint.runs import Options

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import fuzz  # noqa: E402


@pytest.mark.slow
def test_nothing_in_a_script_is_executed(tmp_path, verl_trees):
    marker = tmp_path / "MARKER"
    outside = tmp_path.parent / f"{tmp_path.name}-outside.sh"
    outside.write_text(f"touch {marker}\n")
    scripts = {
        "subst.sh": f"X=$(touch {marker})\nY=`touch {marker}`\npython3 -m verl.trainer.main_ppo trainer.nnodes=$X\n",
        "eval.sh": f"eval 'touch {marker}'\neval \"$(echo touch {marker})\"\n",
        "source.sh": f"source {outside}\n. {outside}\n",
        "trap.sh": f"trap 'touch {marker}' EXIT\n",
        "herestring.sh": f'cat <<< "$(touch {marker})"\ncat <<EOF\n$(touch {marker})\nEOF\n',
        "procsubst.sh": f"diff <(touch {marker}) >(touch {marker})\npython3 -m verl.trainer.main_ppo a=<(touch {marker})\n",
    }
    for name, text in scripts.items():
        (tmp_path / name).write_text(text)
    r = cli("check", "--verl-root", str(verl_trees[NEWEST].root), str(tmp_path))
    assert "Traceback" not in r.stdout + r.stderr
    assert not marker.exists()


def test_config_module_is_never_imported(tmp_path):
    """A Hydra app whose module would write a marker when imported: located with ast only."""
    marker = tmp_path / "IMPORTED"
    pkg = tmp_path / "myapp"
    (pkg / "conf").mkdir(parents=True)
    (pkg / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (pkg / "train.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nimport hydra\n"
        "@hydra.main(config_path='conf', config_name='cfg', version_base=None)\ndef main(cfg):\n    pass\n"
    )
    (pkg / "conf" / "cfg.yaml").write_text(
        "lr: 0.1\nmodel:\n  _target_: os.system\n  command: touch /tmp/never\nx: ${oc.env:HOME}\n"
    )
    s = tmp_path / "run.sh"
    s.write_text("python3 -m myapp.train lr=0.2 model.command=x\npython3 -m myapp.train lrr=1\n")
    r = cli("check", str(s), cwd=tmp_path)
    assert r.returncode == 1 and "VL101" in r.stdout and "`lr`" in r.stdout
    assert not marker.exists()


AUDIT = textwrap.dedent(
    """
    import sys
    events = []
    ALLOWED = set(sys.stdlib_module_names) | {
        "hydra", "omegaconf", "yaml", "_yaml", "antlr4", "tree_sitter", "tree_sitter_bash", "packaging",
        "verl_lint", "hydra_plugins", "typing_extensions", "importlib_resources", "tomli", "conftest", "pathspec",
        "attr",  # omegaconf imports attrs to recognise attrs classes
        "org",  # the stdlib's `copy` probes for Jython's org.python.core (a failed import)
    }
    def hook(event, args):
        if event in ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn"):
            events.append((event, str(args)[:200]))
        elif event == "import":
            top = args[0].split(".")[0]
            if top and top not in ALLOWED and not top.startswith("_"):
                events.append((event, args[0]))
    sys.addaudithook(hook)
    from verl_lint.cli import main
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
    print("AUDIT", events)
    """
)


@pytest.mark.slow
def test_audit_hook_sees_no_process_and_no_foreign_import(verl_trees, tmp_path):
    script = tmp_path / "audit.py"
    script.write_text(AUDIT)
    r = subprocess.run(
        [
            sys.executable,
            str(script),
            "check",
            "--no-cache",
            "--verl-root",
            str(verl_trees[NEWEST].root),
            str(EXAMPLES),
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, NO_COLOR="1"),
    )
    line = next(l for l in r.stdout.splitlines() if l.startswith("AUDIT"))
    assert line == "AUDIT []", line


# Installed as `sitecustomize` (first on PYTHONPATH), so it runs before `-m` finds its module.
HOOK = textwrap.dedent(
    """
    import atexit, os, sys
    HOSTILE = os.environ["HOSTILE_TREE"]
    events = []
    def hook(event, args):
        if event in ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork"):
            events.append((event, str(args)[:200]))
    def report():
        for name, m in list(sys.modules.items()):
            where = getattr(m, "__file__", None) or ""
            if where.startswith(HOSTILE):
                events.append(("module", name))
        print("AUDIT", events, file=sys.stderr)
    sys.addaudithook(hook)
    atexit.register(report)
    """
)


def _hostile_tree(root: Path, shadow_stdlib: bool) -> None:
    """Every way a scanned tree could get code run: each module writes a marker when executed."""

    def evil(rel: str, body: str = "") -> None:
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(f"open({str(root / 'EXECUTED')!r}, 'a').write({rel!r} + '\\n')\n{body}")

    evil("pip/__init__.py")
    evil("pip/__main__.py")  # `python -m pip download` run with this tree as the working directory
    evil("hydra_plugins/__init__.py")  # Hydra's plugin discovery imports every module here
    evil("hydra_plugins/evil_plugin.py")
    evil("evilpkg/__init__.py")  # named by pkg:// search paths: Hydra's pkg:// source imports it
    evil("evilpkg/conf/__init__.py")
    (root / "evilpkg/conf/extra.yaml").write_text("x: 1\n")
    evil("lib/evil2/__init__.py")  # importable only through PYTHONPATH=lib
    evil("lib/evil2/conf/__init__.py")
    (root / "lib/evil2/conf/other.yaml").write_text("y: 1\n")
    evil("structmod.py")  # structured:// search paths import a module
    if shadow_stdlib:
        evil("argparse.py")  # `python -m` puts the working directory before the standard library
    evil(
        "app/main.py",
        "import hydra\n@hydra.main(config_path='conf', config_name='cfg', version_base=None)\ndef main(c):\n    pass\n",
    )
    (root / "app/conf").mkdir(parents=True, exist_ok=True)
    (root / "app/conf/cfg.yaml").write_text("hydra:\n  searchpath:\n    - pkg://evil2.conf\na: 1\n")
    (root / "run.sh").write_text(
        "python3 -m verl.trainer.main_ppo trainer.nnodes=1\n"
        "python3 app/main.py a=2\n"
        "python3 app/main.py hydra.searchpath=[pkg://evilpkg.conf] a=3\n"
        "python3 app/main.py --config-path=pkg://evilpkg.conf --config-name=extra x=2\n"
        "python3 app/main.py hydra.searchpath=[structured://structmod] a=3\n"
    )


def _run_in_hostile_tree(tmp_path: Path, argv: list[str], shadow_stdlib: bool, cache: Path, pythonpath: str = ""):
    tree = tmp_path / "hostile"
    _hostile_tree(tree, shadow_stdlib)
    hook_dir = tmp_path / "hook"
    hook_dir.mkdir()
    (hook_dir / "sitecustomize.py").write_text(HOOK)
    env = dict(os.environ, HOSTILE_TREE=str(tree), NO_COLOR="1", VERL_LINT_CACHE_DIR=str(cache))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(hook_dir), pythonpath.format(tree=tree)) if p)
    r = subprocess.run([sys.executable, *argv], cwd=tree, capture_output=True, text=True, env=env, timeout=600)
    audit = [l for l in r.stderr.splitlines() if l.startswith("AUDIT")]
    executed = (tree / "EXECUTED").read_text() if (tree / "EXECUTED").exists() else ""
    return r, audit, executed


@pytest.mark.slow
def test_hostile_tree_with_the_working_directory_on_sys_path(tmp_path, verl_trees):
    """`python -c` keeps the working directory first on sys.path: Hydra's plugin scan and its
    pkg:// / structured:// sources would import from the tree. Nothing of it may run."""
    runner = "import sys; from verl_lint.cli import main; sys.exit(main(sys.argv[1:]))"
    argv = ["-c", runner, "check", "--no-cache", "--verl-root", str(verl_trees[NEWEST].root), "run.sh"]
    r, audit, executed = _run_in_hostile_tree(tmp_path, argv, False, tmp_path / "cache", pythonpath="{tree}/lib")
    assert audit == ["AUDIT []"], (audit, r.stderr[-2000:])
    assert executed == "", executed
    assert "Traceback" not in r.stderr
    # The launches are still analysed or accounted for: the structured:// one is not analysable.
    assert "run.sh:5:21: VL007" in r.stdout and "structured://structmod" in r.stdout, r.stdout


@pytest.mark.network
def test_hostile_tree_with_python_m_and_a_release_download(tmp_path):
    """`python -m verl_lint.cli check --verl X` from inside the tree, with an empty cache: the
    release download, the working directory on sys.path (a shadowed stdlib module), plugins."""
    argv = ["-m", "verl_lint.cli", "check", "--verl", NEWEST, "run.sh"]
    r, audit, executed = _run_in_hostile_tree(tmp_path, argv, True, tmp_path / "empty-cache")
    assert audit == ["AUDIT []"], (audit, r.stderr[-2000:])
    assert executed == "", executed
    assert "Traceback" not in r.stderr and "VL007" in r.stdout, r.stdout + r.stderr


@pytest.mark.slow
def test_bad_inputs_each_get_one_line(tmp_path, verl_trees):
    root = str(verl_trees[NEWEST].root)
    (tmp_path / "empty").mkdir()
    (tmp_path / "loop").mkdir()
    os.symlink(tmp_path / "loop", tmp_path / "loop" / "self")
    (tmp_path / "loop" / "ok.sh").write_text("python3 -m verl.trainer.main_ppo trainer.nnodes=1\n")
    big = tmp_path / "big.sh"
    big.write_text("#!/bin/bash\n" + "# padding line\n" * (20 * 2**20 // 15))
    cont = tmp_path / "cont.sh"
    cont.write_text(
        "python3 -m verl.trainer.main_ppo \\\n" + "  trainer.nnodes=1 \\\n" * 10_000 + "  trainer.n_gpus_per_node=8\n"
    )
    nested = tmp_path / "nested.sh"
    nested.write_text(
        "X=$((" * 200
        + "1"
        + "))" * 200
        + "\n"
        + 'Y="$("' * 50
        + "\npython3 -m verl.trainer.main_ppo trainer.nnodes=$X\n"
    )
    utf = tmp_path / "latin1.sh"
    utf.write_bytes("# caf\xe9\npython3 -m verl.trainer.main_ppo trainer.nnodes=1\n".encode("latin-1"))
    syntax = tmp_path / "syntax.sh"
    syntax.write_text("if then\n(\npython3 -m verl.trainer.main_ppo trainer.nnodez=1\n")
    cn = tmp_path / "cn.sh"
    cn.write_text("python3 -m verl.trainer.main_ppo --config-name no_such_config a=1\n")
    r = cli(
        "check",
        "--verl-root",
        root,
        str(tmp_path / "empty"),
        str(tmp_path / "loop"),
        str(big),
        str(cont),
        str(nested),
        str(utf),
        str(syntax),
        str(cn),
    )
    out = r.stdout + r.stderr
    assert r.returncode == 2 and "Traceback" not in out
    assert "no shell scripts found" in out
    assert "VL004" in out and "over the 4.0 MiB limit" in out
    assert "VL006" in out and "latin1.sh:1:" in out
    assert "VL001" in out and "VL101" in out  # the broken script is still analysed after its error
    assert "cn.sh:1:48: VL106" in out and "config 'no_such_config' not found" in out


def test_yaml_syntax_error_in_a_user_config_dir(tmp_path):
    pkg = tmp_path / "app"
    (pkg / "conf").mkdir(parents=True)
    (pkg / "main.py").write_text(
        "import hydra\n@hydra.main(config_path='conf', config_name='cfg', version_base=None)\ndef main(c): pass\n"
    )
    (pkg / "conf" / "cfg.yaml").write_text("a: [1, 2\nb: 3\n")
    s = tmp_path / "run.sh"
    s.write_text("python3 app/main.py a=1\n")
    r = cli("check", str(s), cwd=tmp_path)
    assert r.returncode == 1 and "VL106" in r.stdout and "run.sh:1:9" in r.stdout


def test_unreachable_registry_suggests_verl_root(tmp_path):
    s = tmp_path / "run.sh"
    s.write_text("python3 -m verl.trainer.main_ppo a=1\n")
    r = cli("check", "--verl", "999.0.0", str(s), cache=tmp_path / "cache")
    assert r.returncode == 2 and "--verl-root" in r.stderr and "Traceback" not in r.stderr


def test_timeout_is_a_located_finding(tmp_path, verl_trees):
    s = tmp_path / "run.sh"
    s.write_text("python3 -m verl.trainer.main_ppo trainer.nnodes=1\n")
    report = lint_file(s, Options(verl_tree=verl_trees[NEWEST], timeout=1e-6), Composer(cache=False))
    assert [(d.code, d.span.line) for d in report.diagnostics] == [("VL005", 1)]


@pytest.fixture(scope="module")
def fuzz_env(verl_trees):
    return Options(verl_tree=verl_trees[NEWEST]), Composer(cache=False)


@pytest.mark.slow
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
def test_fuzz_generated_scripts(fuzz_env, tmp_path_factory, seed):
    options, composer = fuzz_env
    text = fuzz.script(random.Random(seed))
    problems = fuzz.check_case(text, tmp_path_factory.mktemp("fuzz"), options, composer)
    assert not problems, f"{problems}\n---\n{text}"


# ------------------------------------------------------------ bounded reads ----


def test_fifos_sockets_and_devices_are_never_opened(tmp_path):
    """In a tree they are skipped with a note; named explicitly they are input errors. Opening the
    FIFO would block forever and reading /dev/zero would never end: the time limit fails a regression."""
    from test_walk import SCRIPT, linted

    t = tmp_path / "t"
    t.mkdir()
    (t / "ok.sh").write_text(SCRIPT)
    os.mkfifo(t / "fifo.sh")
    os.mkfifo(t / "pipe")  # no extension: the shebang sniff must not open it either
    os.symlink("/dev/zero", t / "zero.sh")
    os.symlink("/dev/null", t / "null.sh")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(t / "sock.sh"))
        got, r = linted("t", cwd=tmp_path)
        assert got == {"t/ok.sh"} and r.returncode == 0, r.stderr
        assert sorted(r.stderr.splitlines()) == [
            "t/fifo.sh: skipped: not a regular file (FIFO)",
            "t/null.sh: skipped: not a regular file (character device)",
            "t/pipe: skipped: not a regular file (FIFO)",
            "t/sock.sh: skipped: not a regular file (socket)",
            "t/zero.sh: skipped: not a regular file (character device)",
        ]
        got, r = linted("t/fifo.sh", "t/pipe", "t/zero.sh", "t/null.sh", "t/sock.sh", "t/ok.sh", cwd=tmp_path)
    assert got == {"t/ok.sh"} and r.returncode == 2
    assert r.stderr.splitlines() == [
        "t/fifo.sh: error: not a regular file (FIFO)",
        "t/pipe: error: not a regular file (FIFO)",
        "t/zero.sh: error: not a regular file (character device)",
        "t/null.sh: error: not a regular file (character device)",
        "t/sock.sh: error: not a regular file (socket)",
    ]


def test_reads_stop_at_the_size_limit(tmp_path):
    """A huge file is refused by its size before reading; a file whose size says 0 but that has
    more (procfs) is read only to the limit + 1 byte."""
    from test_walk import run_cli

    with open(tmp_path / "huge.bin", "wb") as f:
        f.truncate(64 << 30)  # sparse: 64 GiB by stat, nothing on disk
    os.symlink(tmp_path / "huge.bin", tmp_path / "link.sh")
    os.symlink("/proc/self/maps", tmp_path / "maps.sh")  # the linter's own memory map: > 1 KiB
    (tmp_path / "small.sh").write_text("echo hi\n")
    r = run_cli("check", "--max-file-size", "0.001", "link.sh", "maps.sh", "small.sh", cwd=tmp_path)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "link.sh:1:1: VL004 [error] the file is 65536.0 MiB, over the 1048 bytes limit; not analysed" in r.stdout
    assert "maps.sh:1:1: VL004 [error] the file is over the 1048 bytes limit; not analysed" in r.stdout
    assert "small.sh" not in r.stdout and "2 of 3 scripts" in r.stdout


def test_hydra_assertion_on_odd_input_is_a_finding_not_an_internal_error(lint):
    """Found by bench/fuzz.py (seed 0, case 422): Hydra asserts while resolving a defaults-list
    interpolation; that is a composition error of this input, not a linter failure."""
    report = lint(
        'run\nrun() {\n  local L=[a,b]\n  python3 -m verl.trainer.main_ppo \\\n    "${ARGS[@]}" \\\n    "${GPUS[@]}" \\\n    "${BSZ[@]}" \\\n    "$@" \\\n    "$@" \\\n    critic=${oc.select:trainer.nnodes,1} \\\n    "$@" \\\n    ++actor_rollout_ref.rollout.engine_kwargs.vllm.enable_expert_parallel=$TP\n}\nrun\n'
    )
    assert not report.errors, report.errors
    assert [(d.code, d.span.line) for d in report.diagnostics if d.code == "VL106"] == [("VL106", 4)]
