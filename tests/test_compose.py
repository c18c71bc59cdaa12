"""Composition through the spine equals plain `hydra.compose` on real verl releases."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from conftest import RELEASES
from test_shell import local_imports
from verl_lint.launch.recognise import launches
from verl_lint.launch.locate import locate_app
from verl_lint.shell import evaluate

R = "actor_rollout_ref.rollout"
A = "actor_rollout_ref.actor"
LAUNCHES = [
    [],
    ["data.train_batch_size=512", f"{R}.n=8"],
    [f"+{R}.engine_kwargs.vllm.enable_expert_parallel=True"],
    [f"++{R}.engine_kwargs.vllm.max_num_seqs=64", f"++{A}.ppo_mini_batch_size=32"],
    ["~trainer.val_before_train"],
    ["critic=megatron_critic"],
    ["actor@actor_rollout_ref.actor=megatron_actor"],
    ["trainer.logger=[console,wandb]"],
    ["'trainer.logger=[\"console\",\"wandb\"]'"],
    ["trainer.project_name='my project'"],
    ['trainer.experiment_name="a,b"'],
    [f"{A}.optim.lr=1e-6", f"{A}.optim.weight_decay=0.01"],
    ["algorithm.adv_estimator=grpo", f"{A}.use_kl_loss=True", f"{A}.kl_loss_coef=0.001"],
    [f"{R}.tensor_model_parallel_size=4", f"{R}.gpu_memory_utilization=0.5", f"{R}.name=vllm"],
    ["data.max_prompt_length=$((1024*2))", "data.max_response_length=$((1024 * 8))"],
    ["trainer.total_epochs=1", "trainer.total_epochs=2"],
    [f"+{R}.enable_sleep_mode=False"],
    [f"{R}.val_kwargs.temperature=0.6", f"{R}.val_kwargs.do_sample=True"],
    ["trainer.default_local_dir=/ckpt/run-1", "trainer.resume_mode=disable"],
    ["+ray_kwargs.ray_init.runtime_env.env_vars.VLLM_USE_V1=1"],
    ["data.train_files=[/a.parquet,/b.parquet]"],
    ["trainer.nnodes=2", "trainer.n_gpus_per_node=8", "+trainer.new_key={a:1,b:[1,2]}"],
    ["model_engine=torchtitan"],
    [f"~{R}.val_kwargs", f"++{R}.val_kwargs={{n:1}}"],
]


def _compose_both(verl_trees, composer, tmp_path, version, overrides, name=None):
    script = "python3 -m verl.trainer.main_ppo " + (f"--config-name {name} " if name else "") + " ".join(overrides) + "\n"
    p = tmp_path / "s.sh"
    p.write_text(script)
    [la] = launches(evaluate(str(p), script).commands, str(p))
    app = locate_app(la, verl_trees[version])
    comp = composer.compose(app, la.overrides, la.entry_span)
    words = [w.text for w in la.overrides]
    with initialize_config_dir(config_dir=str(app.config_dirs[-1]), version_base=None):
        try:
            expected = compose(app.config_name, overrides=words)
        except Exception as ex:  # noqa: BLE001
            expected = ex
    return comp, expected


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("overrides", LAUNCHES, ids=[" ".join(o)[:60] or "defaults" for o in LAUNCHES])
def test_fast_composition_equals_hydra(verl_trees, composer, tmp_path, version, overrides):
    comp, expected = _compose_both(verl_trees, composer, tmp_path, version, overrides)
    if isinstance(expected, Exception):
        assert comp.diagnostics, f"Hydra failed ({expected}) but verl-lint composed"
        return
    assert not comp.diagnostics, [d.message for d in comp.diagnostics]
    assert OmegaConf.to_yaml(comp.config) == OmegaConf.to_yaml(expected)  # order and values
    assert OmegaConf.is_struct(comp.config) == OmegaConf.is_struct(expected)


@pytest.mark.parametrize("version", RELEASES)
def test_megatron_config_name(verl_trees, composer, tmp_path, version):
    comp, expected = _compose_both(
        verl_trees, composer, tmp_path, version, ["actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2"], "ppo_megatron_trainer"
    )
    assert OmegaConf.to_container(comp.config) == OmegaConf.to_container(expected)
    assert comp.config.actor_rollout_ref.actor.strategy == "megatron"


def test_errors_are_located_and_do_not_stop_the_rest(verl_trees, composer, tmp_path):
    comp, expected = _compose_both(
        verl_trees, composer, tmp_path, "0.9.1", ["trainer.nnodes=3", "trainer.nnodez=2", "+trainer.nnodes=4", "trainer.n_gpus_per_node=4"]
    )
    assert isinstance(expected, Exception)
    assert [d.code for d in comp.diagnostics] == ["VL101", "VL103"]
    assert comp.config.trainer.nnodes == 3 and comp.config.trainer.n_gpus_per_node == 4


def test_fully_async_app_resolves_pkg_searchpath_without_importing_verl(verl_trees, composer, tmp_path):
    import sys

    script = "python3 -m verl.experimental.fully_async_policy.fully_async_main async_training.staleness_threshold=0.5 trainer.nnodes=2\n"
    p = tmp_path / "s.sh"
    p.write_text(script)
    [la] = launches(evaluate(str(p), script).commands, str(p))
    app = locate_app(la, verl_trees["0.9.1"])
    assert app.searchpath and app.searchpath[0].startswith("file://")
    comp = composer.compose(app, la.overrides, la.entry_span)
    assert not comp.diagnostics
    assert comp.config.async_training.staleness_threshold == 0.5 and comp.config.trainer.nnodes == 2
    assert "verl" not in sys.modules


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("name", ["ppo_trainer", "ppo_megatron_trainer"])
def test_plain_values_read_from_the_nodes_equal_omegaconf_select(verl_trees, version, name):
    """Rules read plain values straight from the nodes (context._plain_value); on every key of
    real composed configs that gives exactly what OmegaConf.select gives, and everything else
    (interpolations, missing values, containers) is left to OmegaConf."""
    from omegaconf import DictConfig

    from verl_lint.config import context

    with initialize_config_dir(config_dir=str(verl_trees[version].root / "verl" / "trainer" / "config"), version_base=None):
        cfg = compose(name, overrides=["actor_rollout_ref.rollout.n=5", "+actor_rollout_ref.rollout.engine_kwargs.vllm.swap_space=4"])

    def keys(node, prefix=""):
        for k in node.keys():
            yield f"{prefix}{k}"
            child = node._get_node(k)
            if isinstance(child, DictConfig) and not child._is_none() and not child._is_missing() and not child._is_interpolation():
                yield from keys(child, f"{prefix}{k}.")

    fast = slow = 0
    for key in keys(cfg):
        v = context._plain_value(cfg, key)
        if v is context._SLOW:
            slow += 1
            continue
        fast += 1
        ref = OmegaConf.select(cfg, key, throw_on_missing=True)
        assert v == ref and type(v) is type(ref), key
    assert context._plain_value(cfg, "actor_rollout_ref.rollout.n") == 5
    assert context._plain_value(cfg, "no.such.key") is context._SLOW
    assert fast > 500 and slow > 100  # both paths are exercised


@pytest.mark.parametrize("version", RELEASES)
def test_provenance_tells_script_user_file_and_verl_default_apart(verl_trees, composer, tmp_path, version):
    """A value is the user's choice when the script or the user's own config file sets it (or it
    interpolates one that is); everything else is verl's shipped default."""
    from verl_lint.config.context import Context

    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "mine.yaml").write_text(
        "hydra:\n  searchpath:\n    - pkg://verl.trainer.config\n"
        "defaults:\n  - ppo_trainer\n  - _self_\n"
        "data:\n  max_prompt_length: 1024\n"
        "trainer:\n  project_name: mine\n"
    )
    script = (
        f"python3 -m verl.trainer.main_ppo --config-path={conf} --config-name=mine "
        "data.max_response_length=2048 trainer.experiment_name=$UNSET\n"
    )
    p = tmp_path / "s.sh"
    p.write_text(script)
    [la] = launches(evaluate(str(p), script).commands, str(p))
    app = locate_app(la, verl_trees[version])
    comp = composer.compose(app, la.overrides, la.entry_span)
    assert not comp.diagnostics, comp.diagnostics
    ctx = Context(la, comp, {}, {})
    assert ctx.provenance("data.max_response_length") == "script"
    assert ctx.provenance("trainer.experiment_name") == "unknown"
    assert ctx.provenance("data.max_prompt_length") == "user-file"
    assert ctx.provenance("trainer.project_name") == "user-file"
    assert ctx.provenance("trainer.nnodes") == "verl-default"
    assert ctx.provenance("actor_rollout_ref.actor.ppo_mini_batch_size") == "verl-default"
    # verl's own interpolations follow what they read: the rollout's prompt length is the user's.
    assert ctx.provenance("actor_rollout_ref.rollout.prompt_length") == "user-file"
    assert ctx.user_set("data.max_response_length") and not ctx.user_set("trainer.nnodes")


CONFIG = Path(__file__).parent.parent / "verl_lint" / "config"


def test_hydra_is_imported_only_when_a_launch_composes(verl_trees, tmp_path):
    """compose.py is below 600 lines, its one function-local import is Hydra's (heavy by design,
    and says so); loading the composer does not import Hydra, the first composition does."""
    assert len((CONFIG / "compose.py").read_text().splitlines()) < 600
    assert [text.split("#")[0].strip() for _, text in local_imports(CONFIG / "compose.py")] == ["from . import hydra_api"]
    assert all("# heavy by design" in text for _, text in local_imports(CONFIG / "compose.py"))
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo trainer.nnodes=2\n")
    probe = f"""
import sys
from verl_lint.config.compose import Composer
from verl_lint.launch.locate import locate_app, tree_at
from verl_lint.launch.recognise import launches
from verl_lint.shell import evaluate
before = "hydra" in sys.modules
[launch] = launches(evaluate({str(script)!r}, open({str(script)!r}).read()).commands, {str(script)!r})
app = locate_app(launch, tree_at({str(verl_trees[RELEASES[0]].root)!r}, "checkout"))
comp = Composer(cache=False).compose(app, launch.overrides, launch.entry_span)
print(before, "hydra" in sys.modules, comp.config.trainer.nnodes)
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["False", "True", "2"], out.stderr
