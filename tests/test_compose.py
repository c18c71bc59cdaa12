"""Composition on real verl releases beyond equality with plain `hydra.compose` (that is
tests/test_equivalence.py): located errors, package searchpaths, plain values, provenance."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from conftest import across_releases
from verl_lint.launch.recognise import launches
from verl_lint.launch.locate import locate_app
from verl_lint.shell import evaluate


def _compose_both(verl_trees, composer, tmp_path, version, overrides):
    script = "python3 -m verl.trainer.main_ppo " + " ".join(overrides) + "\n"
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


def test_errors_are_located_and_do_not_stop_the_rest(verl_trees, composer, tmp_path):
    comp, expected = _compose_both(
        verl_trees, composer, tmp_path, "0.9.1", ["trainer.nnodes=3", "trainer.nnodez=2", "+trainer.nnodes=4", "trainer.n_gpus_per_node=4"]
    )
    assert isinstance(expected, Exception)
    assert [d.code for d in comp.diagnostics] == ["VL101", "VL103"]
    assert comp.config.trainer.nnodes == 3 and comp.config.trainer.n_gpus_per_node == 4


@pytest.mark.slow
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


@pytest.mark.slow
@pytest.mark.parametrize("version", across_releases(fails_on_oldest="verl 0.5.0's configs have fewer plain keys than the test's floor of 500 (issue #19)"))
@pytest.mark.parametrize("name", ["ppo_trainer", "ppo_megatron_trainer"])
def test_plain_values_read_from_the_nodes_equal_omegaconf_select(verl_trees, version, name):
    """Rules read plain values straight from the nodes (engine._plain_value); on every key of
    real composed configs that gives exactly what OmegaConf.select gives, and everything else
    (interpolations, missing values, containers) is left to OmegaConf."""
    from omegaconf import DictConfig

    from verl_lint.config import context as engine

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
        v = engine._plain_value(cfg, key)
        if v is engine._SLOW:
            slow += 1
            continue
        fast += 1
        ref = OmegaConf.select(cfg, key, throw_on_missing=True)
        assert v == ref and type(v) is type(ref), key
    assert engine._plain_value(cfg, "actor_rollout_ref.rollout.n") == 5
    assert engine._plain_value(cfg, "no.such.key") is engine._SLOW
    assert fast > 500 and slow > 100  # both paths are exercised


@pytest.mark.slow
@pytest.mark.parametrize("version", across_releases())
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
