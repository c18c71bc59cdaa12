"""The per-file result cache (results.py): a warm run gives the same report without importing
Hydra, OmegaConf or tree-sitter, and every input a finding came from invalidates it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import NEWEST

# Runs the CLI in a fresh interpreter and says which heavy modules it imported.
_PROBE = (
    "import sys\n"
    "from verl_lint import cli\n"
    "code = cli.main(sys.argv[1:])\n"
    "heavy = sorted(m for m in ('hydra', 'omegaconf', 'tree_sitter', 'verl_lint.pipeline') if m in sys.modules)\n"
    "print('HEAVY=' + ','.join(heavy), file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _check(project: Path, tree_root: Path, *extra: str) -> tuple[list, bool, str]:
    """(the JSON findings, whether the file came from the result cache, heavy modules imported)."""
    args = ["check", "run.sh", "--verl-root", str(tree_root), "--output-format", "json", "-v", *extra]
    p = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], cwd=project, capture_output=True, text=True, env=os.environ
    )
    assert p.returncode in (0, 1), p.stderr
    cached = "1 of 1 file read back from the result cache" in p.stderr
    heavy = p.stderr.split("HEAVY=")[1].strip()
    return [(d["code"], d["line"], d["column"]) for d in json.loads(p.stdout) if "code" in d], cached, heavy


def _project(tmp_path: Path, script: str) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'p'\n")  # the project's root: nothing above it is read
    (project / "run.sh").write_text(script)
    return project


@pytest.mark.slow
def test_a_warm_run_reads_the_report_back_without_the_heavy_imports(tmp_path, verl_trees):
    tree = verl_trees[NEWEST].root
    project = _project(tmp_path, "#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.nnodez=2\n")
    cold, cached, heavy = _check(project, tree)
    assert ("VL101", 2, 34) in cold and not cached and "hydra" in heavy
    warm, cached, heavy = _check(project, tree)
    assert warm == cold and cached and heavy == ""
    # Another option is another entry.
    ignored, cached, _ = _check(project, tree, "--ignore", "VL101")
    assert not cached and "VL101" not in [c for c, *_ in ignored]
    # --no-cache neither reads nor writes it.
    p = subprocess.run(
        [sys.executable, "-c", _PROBE, "check", "run.sh", "--verl-root", str(tree), "--no-cache", "-v"],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert "result cache" not in p.stderr and "hydra" in p.stderr.split("HEAVY=")[1]


def test_the_script_and_what_it_sources_invalidate_it(tmp_path, verl_trees):
    tree = verl_trees[NEWEST].root
    project = _project(
        tmp_path,
        "#!/bin/bash\nsource ./vars.sh\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm $ARGS\n",
    )
    (project / "vars.sh").write_text("ARGS=trainer.nnodes=2\n")
    assert _check(project, tree)[0] == [] and _check(project, tree)[1]
    (project / "vars.sh").write_text("ARGS=trainer.nnodez=2\n")  # same size would not matter: mtime too
    found, cached, _ = _check(project, tree)
    assert not cached and [c for c, *_ in found] == ["VL101"]
    (project / "run.sh").write_text("#!/bin/bash\nsource ./vars.sh\n")
    assert _check(project, tree)[0] == []


def test_the_projects_own_config_dir_invalidates_it(tmp_path, verl_trees):
    tree = verl_trees[NEWEST].root
    script = "#!/bin/bash\npython3 -m verl.trainer.main_ppo --config-path=$(pwd)/conf --config-name=mine trainer.total_epochs=2\n"
    project = _project(tmp_path, script)
    conf = project / "conf"
    conf.mkdir()
    (conf / "mine.yaml").write_text("trainer:\n  total_epochs: 1\n")
    assert _check(project, tree)[0] == [] and _check(project, tree)[1]
    (conf / "mine.yaml").write_text("trainer:\n  epochs: 1\n")
    found, cached, _ = _check(project, tree)
    assert not cached and [c for c, *_ in found] == ["VL101"], found


def test_a_new_requirements_file_invalidates_it(tmp_path, verl_trees):
    """The vLLM version comes from the project's requirements: a file that did not exist when
    the entry was written (the directory lists other names now) is a miss."""
    tree = verl_trees[NEWEST].root
    project = _project(
        tmp_path,
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo +actor_rollout_ref.rollout.engine_kwargs.vllm.not_an_arg=1\n",
    )
    script = (project / "run.sh").read_text()

    def message() -> str:
        args = ["check", "run.sh", "--verl-root", str(tree), "--output-format", "json"]
        p = subprocess.run([sys.executable, "-m", "verl_lint", *args], cwd=project, capture_output=True, text=True)
        [d] = [d for d in json.loads(p.stdout) if d.get("code") == "VL701"]
        return d["message"]

    assert "vllm==0.24.0 in verl-0.9.1" in message() and "vllm==0.24.0 in verl-0.9.1" in message()
    (project / "requirements.txt").write_text("vllm==0.12.0\n")
    assert "vllm==0.12.0 in requirements.txt" in message() and (project / "run.sh").read_text() == script


@pytest.mark.slow
def test_a_change_in_the_verl_tree_invalidates_it(tmp_path, verl_trees):
    tree = tmp_path / "verl-copy"
    shutil.copytree(verl_trees[NEWEST].root / "verl", tree / "verl")
    project = _project(
        tmp_path,
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm trainer.balance_batch=False\n",
    )
    assert _check(project, tree)[0] == [] and _check(project, tree)[1]
    config = tree / "verl/trainer/config/ppo_trainer.yaml"
    config.write_text(config.read_text().replace("balance_batch:", "balance_batches:", 1))
    found, cached, _ = _check(project, tree)
    assert not cached and [c for c, *_ in found] == ["VL101"]


def test_a_project_module_read_only_through_the_index_stamp_invalidates_it(tmp_path, verl_trees):
    """A project's own package is read into the reader index; a second script gets that index
    from the disk cache, judged by the files' sizes and mtimes only: those files are still its
    dependencies (VL230 follows what the project's code reads)."""
    tree = verl_trees[NEWEST].root
    project = _project(tmp_path, "#!/bin/bash\npython3 -m proj.main_x +trainer.my_knob=1\n")
    (project / "proj/config").mkdir(parents=True)
    (project / "proj/__init__.py").write_text("")
    (project / "proj/main_x.py").write_text(
        "import hydra\n\n\n@hydra.main(config_path='config', config_name='mine', version_base=None)\n"
        "def main(cfg):\n    print(cfg.trainer.total_epochs)\n"
    )
    (project / "proj/config/mine.yaml").write_text("trainer:\n  total_epochs: 1\n")
    (project / "proj/helpers.py").write_text("def f(cfg):\n    return cfg.trainer.total_epochs\n")
    assert [c for c, *_ in _check(project, tree)[0]] == ["VL230"]  # builds the index of proj/
    (project / "run.sh").rename(project / "first.sh")
    (project / "run.sh").write_text("#!/bin/bash\npython3 -m proj.main_x +trainer.my_knob=2\n")
    assert [c for c, *_ in _check(project, tree)[0]] == ["VL230"]  # the index from the disk cache
    (project / "proj/helpers.py").write_text("def f(cfg):\n    return cfg.trainer.my_knob\n")
    found, cached, _ = _check(project, tree)
    assert not cached and found == []


def test_the_models_config_json_invalidates_it(tmp_path, verl_trees):
    """A model directory that did not exist, then does, then changes its heads: each a miss."""
    tree = verl_trees[NEWEST].root
    model = tmp_path / "model"
    script = f"#!/bin/bash\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm actor_rollout_ref.model.path={model} actor_rollout_ref.rollout.tensor_model_parallel_size=4\n"
    project = _project(tmp_path, script)
    assert [c for c, *_ in _check(project, tree, "--gpu-memory", "80")[0]] == ["VL329"]
    model.mkdir()
    config = {
        "model_type": "qwen2",
        "hidden_size": 1024,
        "num_attention_heads": 16,
        "num_key_value_heads": 4,
        "num_hidden_layers": 4,
        "vocab_size": 1000,
    }
    (model / "config.json").write_text(json.dumps(config))
    found, cached, _ = _check(project, tree, "--gpu-memory", "80")
    assert not cached and found == []
    (model / "config.json").write_text(json.dumps({**config, "num_attention_heads": 14}))
    found, cached, _ = _check(project, tree, "--gpu-memory", "80")
    assert not cached and [c for c, *_ in found] == ["VL320"]
