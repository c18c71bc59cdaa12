"""Composition on real verl releases beyond equality with plain `hydra.compose` (that is
tests/test_equivalence.py): located errors, package searchpaths, plain values, provenance."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
from conftest import NEWEST, across_releases
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from test_shell import local_imports

from verl_lint.launch.locate import locate_app
from verl_lint.launch.recognise import launches
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
        verl_trees,
        composer,
        tmp_path,
        "0.9.1",
        ["trainer.nnodes=3", "trainer.nnodez=2", "+trainer.nnodes=4", "trainer.n_gpus_per_node=4"],
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


def _read_as_select_reads(cfg, read, keys) -> tuple[int, int]:
    """(how many of `keys` `read` answered, how many it left to OmegaConf); every answer is exactly
    what OmegaConf.select gives there, value and type."""
    from verl_lint.config import context

    answered = left = 0
    for key in keys:
        v = read(cfg, key)
        if v is context._SLOW:
            left += 1
            continue
        answered += 1
        ref = OmegaConf.select(cfg, key, throw_on_missing=True)
        assert v == ref and type(v) is type(ref), key
    return answered, left


def _keys(node, prefix=""):
    """Every key of a composed config, down through plain dicts."""
    from omegaconf import DictConfig

    for k in node.keys():
        yield f"{prefix}{k}"
        child = node._get_node(k)
        if (
            isinstance(child, DictConfig)
            and not child._is_none()
            and not child._is_missing()
            and not child._is_interpolation()
        ):
            yield from _keys(child, f"{prefix}{k}.")


@pytest.mark.slow
@pytest.mark.parametrize(
    "version",
    across_releases(
        fails_on_oldest="verl 0.5.0's configs have fewer plain keys than the test's floor of 500 (issue #19)"
    ),
)
@pytest.mark.parametrize("name", ["ppo_trainer", "ppo_megatron_trainer"])
def test_plain_values_read_from_the_nodes_equal_omegaconf_select(verl_trees, version, name):
    """Rules read plain values straight from the nodes (context._plain_value); on every key of
    real composed configs that gives exactly what OmegaConf.select gives, and everything else
    (interpolations, missing values, containers) is left to OmegaConf."""

    from verl_lint.config import context

    with initialize_config_dir(
        config_dir=str(verl_trees[version].root / "verl" / "trainer" / "config"), version_base=None
    ):
        cfg = compose(
            name,
            overrides=["actor_rollout_ref.rollout.n=5", "+actor_rollout_ref.rollout.engine_kwargs.vllm.swap_space=4"],
        )

    fast, slow = _read_as_select_reads(cfg, context._plain_value, _keys(cfg))
    assert context._plain_value(cfg, "actor_rollout_ref.rollout.n") == 5
    assert context._plain_value(cfg, "no.such.key") is context._SLOW
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


CONFIG = Path(__file__).parent.parent / "verl_lint" / "config"


def test_hydra_is_imported_only_when_a_launch_composes(verl_trees, tmp_path):
    """compose.py is below 600 lines, its one function-local import is Hydra's (heavy by design,
    and says so); loading the composer does not import Hydra, the first composition does."""
    assert len((CONFIG / "compose.py").read_text().splitlines()) < 600
    assert [text.split("#")[0].strip() for _, text in local_imports(CONFIG / "compose.py")] == [
        "from . import hydra_api"
    ]
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
app = locate_app(launch, tree_at({str(verl_trees[NEWEST].root)!r}, "checkout"))
comp = Composer(cache=False).compose(app, launch.overrides, launch.entry_span)
print(before, "hydra" in sys.modules, comp.config.trainer.nnodes)
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["False", "True", "2"], out.stderr


def test_hydras_plugin_scan_can_import_the_standard_library(tmp_path):
    """The plugin scan runs with only installed packages on `sys.path` (a scanned repository's
    `hydra_plugins/` must not run), the standard library included: a process that has not loaded
    `zipfile` yet (the `pkg://` config source imports it) still composes with verl's package
    search path. It once did only because some earlier import had loaded it."""
    probe = """
import sys, warnings
warnings.simplefilter("error")  # Hydra warns, and skips the plugin, when one fails to import
assert "zipfile" not in sys.modules
from verl_lint.config import hydra_api
from hydra.core.plugins import Plugins
from hydra.plugins.config_source import ConfigSource
print(sorted(p.__name__ for p in Plugins.instance().discover(ConfigSource)))
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "ImportlibResourcesConfigSource" in out.stdout, out.stdout


@pytest.mark.parametrize("version", [NEWEST, "0.7.1"])
@pytest.mark.parametrize("name", ["ppo_trainer", "ppo_megatron_trainer"])
def test_simple_interpolations_read_from_their_target_equal_omegaconf_select(verl_trees, version, name):
    """`${a.b}` and `${oc.select:a.b,DEFAULT}` are read from their target's node without
    OmegaConf's grammar (context._simple_reference); on every interpolated key of real composed
    configs that is exactly what OmegaConf.select resolves, value and type, and what it cannot
    read that way is left to OmegaConf."""
    from verl_lint.config import context

    with initialize_config_dir(
        config_dir=str(verl_trees[version].root / "verl" / "trainer" / "config"), version_base=None
    ):
        cfg = compose(name, overrides=["actor_rollout_ref.actor.use_dynamic_bsz=true", "data.max_prompt_length=77"])
    interpolated = [k for k in _keys(cfg) if context._plain_value(cfg, k) is context._SLOW]
    read, left = _read_as_select_reads(cfg, context._simple_reference, interpolated)
    assert read > 10 and left > 0  # both paths are exercised
    assert context._select(cfg, "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz") is True  # through oc.select


def test_interpolations_the_shortcut_leaves_to_omegaconf():
    """What `_simple_reference` does not read (OmegaConf would convert, default, fail or read
    something else there) is resolved by OmegaConf: the reads still equal OmegaConf.select."""
    from dataclasses import dataclass

    from verl_lint.config import context

    @dataclass
    class Typed:
        n: int = "${a.s}"  # type: ignore[assignment] - an IntegerNode converts the string target

    cfg = OmegaConf.create(
        {
            "a": {"s": "7", "b": True, "none": None, "missing": "???", "inter": "${a.b}", "list": [1, 2]},
            "node": "${a.b}",
            "selected": "${oc.select:a.b,false}",
            "defaulted": "${oc.select:a.nope,3}",
            "to_none": "${a.none}",
            "to_missing": "${oc.select:a.missing,5}",
            "chained": "${a.inter}",
            "relative": {"x": 1, "y": "${.x}"},
            "text": "prefix ${a.b}",
            "odd_default": "${oc.select:a.b,'x y'}",
            "typed": Typed,
        }
    )
    for key, shortcut in [
        ("node", True),
        ("selected", True),
        ("defaulted", False),
        ("to_none", False),
        ("to_missing", False),
        ("chained", False),
        ("relative.y", False),
        ("text", False),
        ("odd_default", False),
        ("typed.n", False),
    ]:
        assert (context._simple_reference(cfg, key) is not context._SLOW) == shortcut, key
        assert context._select(cfg, key) == OmegaConf.select(cfg, key), key
    assert (
        context._select(cfg, "typed.n") == 7 and context._simple_reference(cfg.a, "inter") is context._SLOW
    )  # not the root


def test_a_lent_base_is_put_back_as_it_was(verl_trees, composer, tmp_path):
    """`check` composes each launch on its base itself (`Composer.lending`) and puts back what its
    overrides changed. After every hand-written launch of the equivalence suite that sets values
    only (sets, adds, deletes, merges, lists, `hydra.*` keys, rejected overrides; the slow tier's
    equivalence suite composes all of them lent), lent in turn from one composer,
    the config equals a fresh copy's (what `compose` gives outside a loan), and the base pickles to the very bytes it was made from. A
    key the loan cannot follow (a list index past the end) gives the base up; so does a block left
    by an exception."""
    import pickle

    from test_equivalence import WORDS, bench

    lender = composer
    tree = verl_trees[NEWEST]

    def launch(words):
        script = tmp_path / "s.sh"
        script.write_text("python3 -m verl.trainer.main_ppo " + " ".join(f"'{w}'" for w in words) + "\n")
        [la] = launches(evaluate(str(script), script.read_text()).commands, str(script))
        return la, locate_app(la, tree)

    lent_bases = 0
    values_only = [w for w in WORDS if w and all("." in x.split("=")[0] for x in w)]  # one base: the default
    for words in [*values_only, ["data.train_files=[a]", "data.train_files.5=b"]]:
        la, app = launch(words)
        with lender.lending():
            lent = bench.lint_outcome(lender.compose(app, la.overrides, la.entry_span), la)
            loan = lender._loan
        fresh = bench.lint_outcome(lender.compose(app, la.overrides, la.entry_span), la)
        assert (lent.yaml, lent.signature, lent.all_errors) == (fresh.yaml, fresh.signature, fresh.all_errors), words
        if loan.key is None:
            continue  # the base does not compose
        lent_bases += 1
        if loan.spoilt:
            assert words[-1] == "data.train_files.5=b" and loan.key not in lender._live
            continue
        blob = lender._bases[loan.key]
        assert pickle.dumps(lender._live[loan.key], protocol=pickle.HIGHEST_PROTOCOL) == blob, words
    assert lent_bases > 20

    la, app = launch(["trainer.nnodes=3"])
    with pytest.raises(RuntimeError), lender.lending():
        lender.compose(app, la.overrides, la.entry_span)
        key = lender._loan.key
        raise RuntimeError("a time limit, midway")
    assert key not in lender._live


SIMPLE_AND_NOT = [
    *(
        "a=1 a=-0 a=-5 a=01 a=00 a=+1 a=1_000 a=0x10 a=1. a=.5 a=0.0 a=-1.0 a=1e5 a=1E-5 a=1.5e+3 a=10e3 a=1e a=1.5.5".split()
    ),
    *("a=inf a=Inf a=nan a=NaN a=nan5 a=true a=True a=TRUE a=true1 a=false a=null a=NULL a=None".split()),
    *("a=abc a=_x a=x1 a=a-b a=a.b a=Qwen/Qwen2.5-7B a=1_2.5 a= a=- a.b_c.d2=e_f3 a-b=1 a.0.b=1".split()),
    *("+a.b=x ++a.b=y ~a=1 ~a a=[1,2] a={b:1} a=${x.y} a='q' a=b,c hydra.run.dir=/tmp/x".split()),
    "a= 1",
    "a=x y",
    *("a=/data/x.parquet a=qwen2.5-7b_run a=Qwen/Qwen3-8B a=1-2 a=-x a=- a=/ a=. a=.5 a=1.5.5 a=x.y a=a--b".split()),
    *("a=true-x a=inf-1 a=nan.5 a=1_0.5 a=+1 a=+x a=1e5x a=x/ a=./a a=~/x a=x@y a=x:y ~a.b ~a.b= ~ ~a.0".split()),
]


def test_simple_overrides_are_read_as_hydras_parser_reads_them():
    """The override forms most launches are made of are parsed without Hydra's grammar
    (hydra_api.simple_override): each line it reads gives the very Override Hydra's parser gives
    (value and its type), on tricky values and on every hand-written launch of the equivalence
    suite; the rest is left to Hydra (the slow tier checks every line of the bench corpus)."""
    from test_equivalence import WORDS, simple_overrides_read

    lines = [*SIMPLE_AND_NOT, *(w for words in WORDS for w in words)]
    read = simple_overrides_read(lines)
    assert read > 40 and read < len(lines) - 20  # both paths are exercised


class _Mode(Enum):
    A = 1
    B = 2


@dataclass
class _Typed:  # fields of each kind of typed node
    n: int = 1
    x: float = 0.5
    flag: bool = False
    s: str = "a"
    maybe: int | None = None
    mode: _Mode = _Mode.A
    items: list = field(default_factory=lambda: [1, 2])


def test_a_value_set_in_place_is_what_hydra_sets():
    """`hydra_api.apply_override` sets a plain `a.b=VALUE` on a value node itself (the node's
    `_set_value`, as OmegaConf.update ends up doing) and leaves every other case to Hydra. On a
    config with typed fields (conversions, rejected values), a read-only section, None, missing
    and interpolated sections, lists and int keys, each override gives the very config and error
    Hydra's `_apply_overrides_to_config` gives, and the in-place path takes the plain cases."""
    import copy

    from omegaconf import IntegerNode

    from bench.run import node_signature
    from verl_lint.config import hydra_api

    cfg = OmegaConf.create(
        {
            "plain": {"n": 1, "s": "x", "none": None, "missing": "???", "ref": "${plain.n}", "deep": {"k": 0}},
            "typed": _Typed,
            "locked": {"k": 1},
            "none_section": None,
            "missing_section": "???",
            "ref_section": "${plain.deep}",
            "lst": [1, {"k": 2}],
            "ints": {1: "one"},
            "untyped_int": IntegerNode(5),
        }
    )
    cfg._get_node("untyped_int")._metadata.ref_type = Any  # a typed node with no type hint: Hydra replaces it
    OmegaConf.set_readonly(cfg.locked, True)
    OmegaConf.set_readonly(cfg.locked._get_node("k"), False)  # its own flag says writable, its section's not
    OmegaConf.set_struct(cfg, True)  # as Hydra composes it
    lines = [
        *("plain.n=2 plain.n=abc plain.n=1.5 plain.s=y plain.s=3 plain.none=1 plain.missing=2 plain.ref=5".split()),
        *("plain.deep.k=true plain.deep=3 plain.nope=1 plain.n.sub=1 +plain.new=1 ++plain.n=7 ~plain.s".split()),
        *(
            "typed.n=2 typed.n=abc typed.n=2.5 typed.n=true typed.x=2 typed.x=abc typed.flag=true typed.flag=yes".split()
        ),
        *("typed.flag=1 typed.s=5 typed.s=true typed.maybe=3 typed.maybe=null typed.mode=B typed.mode=C".split()),
        *("typed.mode=2 typed.items=3 typed.nope=1 locked.k=2 none_section.k=1 missing_section.k=1".split()),
        *("ref_section.k=9 lst.0=5 lst.1.k=3 ints.1=two plain.n=null plain.s=${plain.n} plain.s=???".split()),
        *("plain.s='quoted' plain.n=[1,2] plain.deep={k:5} plain.n=1e3 plain.n=-0 hydra.x=1".split()),
        *("untyped_int=abc untyped_int=7".split()),
    ]
    in_place = 0
    for line in lines:
        override = hydra_api.parse_override(line)
        outcomes = []
        for apply in (
            hydra_api.apply_override,
            lambda o, c: hydra_api.ConfigLoaderImpl._apply_overrides_to_config([o], c),
        ):
            c = copy.deepcopy(cfg)
            try:
                apply(override, c)
                error = None
            except Exception as ex:  # noqa: BLE001 - the error is part of the outcome
                error = (type(ex).__name__, str(ex))
            outcomes.append((error, node_signature(c)))
        assert outcomes[0] == outcomes[1], line
        c = copy.deepcopy(cfg)
        in_place += override.type is hydra_api.OverrideType.CHANGE and hydra_api._set_existing(
            c, override.key_or_group, override.value()
        )
    assert 15 <= in_place <= len(lines) - 25  # both paths are exercised


def test_plain_texts_are_read_as_hydras_parser_reads_them():
    """Random values of names, digits, signs, `.`, `/`, `-`, `_` and `e` (one of Hydra's tokens
    or several: numbers, words, paths, run names): each line hydra_api.simple_override reads gives
    the very Override Hydra's parser gives, and it reads most of them."""
    import random

    from test_equivalence import simple_overrides_read

    rng = random.Random(0)
    pieces = ["a", "x", "e", "E", "_", "0", "1", "7", ".", "/", "-", "+", "true", "nan", "inf", "null", "Qwen", "2.5"]
    lines = [f"k.v={''.join(rng.choice(pieces) for _ in range(rng.randint(1, 5)))}" for _ in range(1500)]
    assert simple_overrides_read(lines) > len(lines) // 2
