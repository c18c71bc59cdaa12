"""`verl-lint config`: the composed config of a launch with the origin of each value, as a user
runs it (a real subprocess), checked against plain Hydra on the same release."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import yaml
from conftest import NEWEST, across_releases

SCRIPT = """#!/bin/bash
N=${N:-8}
python3 -m verl.trainer.main_ppo \\
  data.train_batch_size=256 \\
  actor_rollout_ref.rollout.n=$N \\
  actor_rollout_ref.rollout.tensor_model_parallel_size=$TP \\
  trainer.total_epochs=3
python3 -m verl.trainer.main_ppo data.train_batch_size=128 trainer.total_epochs=3
"""


def _config(tmp_path, tree, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "verl_lint", "config", *args, "--verl-root", str(tree.root)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )


@pytest.fixture
def script(tmp_path):
    (tmp_path / "run.sh").write_text(SCRIPT)
    return tmp_path


def test_each_value_says_where_it_comes_from(script, verl_trees):
    p = _config(script, verl_trees[NEWEST], "run.sh:3", "--key", "actor_rollout_ref.rollout")
    assert p.returncode == 0, p.stderr
    lines = {line.split(":")[0]: line for line in p.stdout.splitlines()}
    assert lines["# run.sh"].startswith("# run.sh:3  verl.trainer.main_ppo  (verl 0.9.1, config ppo_trainer)")
    assert (
        lines["actor_rollout_ref.rollout.n"].endswith("# script, line 5")
        and ": 8 " in lines["actor_rollout_ref.rollout.n"]
    )
    tp = lines["actor_rollout_ref.rollout.tensor_model_parallel_size"]
    assert tp.startswith("actor_rollout_ref.rollout.tensor_model_parallel_size: $TP ")  # as written: known at run time
    assert tp.endswith("# script, line 6, known at run time: $TP is not set in the script (comes from the environment)")
    # An interpolation: its value, and where the key it reads was set.
    assert re.match(
        r"actor_rollout_ref\.rollout\.n_gpus_per_node: 8 +# verl-default, via trainer\.n_gpus_per_node$",
        lines["actor_rollout_ref.rollout.n_gpus_per_node"],
    )
    assert lines["actor_rollout_ref.rollout.temperature"].endswith("# verl-default")
    assert not any(k.startswith("data.") for k in lines)  # --key


@pytest.mark.parametrize("version", across_releases())
def test_values_are_what_hydra_composes(script, verl_trees, version):
    """The launch on line 8 sets only known values: its config is plain Hydra's, key for key."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    tree = verl_trees[version]
    p = _config(script, tree, "run.sh:8", "--output-format", "json")
    [launch] = json.loads(p.stdout)
    with initialize_config_dir(str(tree.root / "verl/trainer/config"), version_base=None):
        cfg = compose("ppo_trainer", overrides=["data.train_batch_size=128", "trainer.total_epochs=3"])

    def leaves(node, prefix=""):
        if isinstance(node, dict) and node:
            for k, v in node.items():
                yield from leaves(v, f"{prefix}.{k}" if prefix else k)
        else:
            yield prefix, node

    assert {k: v["value"] for k, v in launch["values"].items()} == dict(
        leaves(OmegaConf.to_container(cfg, resolve=False))
    )
    assert launch["values"]["data.train_batch_size"] == {"value": 128, "origin": "script", "line": 8}
    as_yaml = yaml.safe_load(
        _config(script, tree, "run.sh:8", "--output-format", "yaml", "--key", "trainer.total_epochs").stdout
    )
    assert as_yaml[0]["values"] == {"trainer.total_epochs": {"value": 3, "origin": "script", "line": 8}}


def test_the_projects_own_config_file_is_an_origin(tmp_path, verl_trees):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf/mine.yaml").write_text("trainer:\n  total_epochs: 5\n  project_name: mine\n")
    (tmp_path / "run.sh").write_text(
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo --config-path=$(pwd)/conf --config-name=mine trainer.total_epochs=2\n"
    )
    p = _config(tmp_path, verl_trees[NEWEST], "run.sh", "--output-format", "json")
    [launch] = json.loads(p.stdout)
    assert launch["values"]["trainer.project_name"] == {
        "value": "mine",
        "origin": "user-file",
        "line": 3,
        "file": "conf/mine.yaml",
    }
    assert launch["values"]["trainer.total_epochs"] == {
        "value": 2,
        "origin": "script",
        "line": 2,
    }  # the override wins over the file
    text = _config(tmp_path, verl_trees[NEWEST], "run.sh").stdout
    assert re.search(r"^trainer\.project_name: mine +# user-file, conf/mine\.yaml:3$", text, re.MULTILINE), text


def test_diff_shows_only_what_differs(script, verl_trees):
    p = _config(script, verl_trees[NEWEST], "run.sh:3", "run.sh:8", "--diff")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [
        "--- run.sh:3",
        "+++ run.sh:8",
        # the interpolations reading rollout.n differ too: their values are compared
        "-actor_rollout_ref.actor.rollout_n: 8  # script, line 5, via actor_rollout_ref.rollout.n",
        "+actor_rollout_ref.actor.rollout_n: 1  # verl-default, via actor_rollout_ref.rollout.n",
        "-actor_rollout_ref.ref.rollout_n: 8  # script, line 5, via actor_rollout_ref.rollout.n",
        "+actor_rollout_ref.ref.rollout_n: 1  # verl-default, via actor_rollout_ref.rollout.n",
        "-actor_rollout_ref.rollout.n: 8  # script, line 5",
        "+actor_rollout_ref.rollout.n: 1  # verl-default",
        "-actor_rollout_ref.rollout.tensor_model_parallel_size: $TP  # script, line 6, known at run time: $TP is not set in the script (comes from the environment)",
        "+actor_rollout_ref.rollout.tensor_model_parallel_size: 2  # verl-default",
        "-critic.rollout_n: 8  # script, line 5, via actor_rollout_ref.rollout.n",
        "+critic.rollout_n: 1  # verl-default, via actor_rollout_ref.rollout.n",
        "-data.train_batch_size: 256  # script, line 4",
        "+data.train_batch_size: 128  # script, line 8",
    ]


@pytest.mark.parametrize(
    "args,message",
    [
        (["missing.sh"], "missing.sh: no such file"),
        (["run.sh:2"], "run.sh:2: no launch of a verl entry point on that line"),
        (["run.sh", "run.sh:8", "--diff"], "run.sh: --diff needs one launch: give SCRIPT:LINE (run.sh:3, run.sh:8)"),
        (["run.sh", "--diff"], "--diff compares two launches"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(script, verl_trees, args, message):
    p = _config(script, verl_trees[NEWEST], *args)
    assert (
        p.returncode == 2
        and message in p.stderr
        and len(p.stderr.strip().splitlines()) == 1
        and "Traceback" not in p.stderr
    )
