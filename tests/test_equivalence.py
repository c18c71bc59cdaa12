"""verl-lint composes the benchmark corpus exactly as plain `hydra.compose` does.

The corpus (bench/make_corpus.py, seed 0: 140 scripts, 200 launches) is generated into a
temp dir from the real keys of verl 0.9.1's composed config. Each launch goes through the
real front end (`shell.evaluate` -> `launch.launches` -> `locate.locate_app`) and
`Composer.compose` (lent its base, as `check` composes), and is compared with plain `hydra.compose` on the same config dir with
the words the shell hands to Hydra:

* both compose: equal `to_container(resolve=False)`, `to_yaml` (key order) and node
  signatures (node classes, flags such as struct);
* Hydra fails: verl-lint fails too, with a matching error kind, and its *first* reported
  error is on the override Hydra's error is about (verl-lint reports every failing
  override, Hydra stops at the first).

Each launch is its own test case against verl 0.9.1, 0.7.1 and 0.5.0 (keys drawn from 0.9.1,
so against the older releases many launches fail: that exercises the error paths). A stratified sample
keeps the run short (plain Hydra costs ~0.2 s per launch); `VERL_LINT_EQUIV_SAMPLE=all`
(or a number) runs more. The words verl-lint's shell produces are also checked against
what real bash produces for the same scripts.

Hand-written launches (Hydra's override grammar, composition rules and the shell forms scripts
use) are compared the same way against every release: this is the one Hydra-equivalence suite.
The whole suite is the `slow` tier (plain Hydra alone costs ~0.2 s per launch).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import random
import shlex
import shutil
import sys
from pathlib import Path

import pytest
from conftest import NEWEST, OLDER, OLDEST, across_releases
from hydra import initialize_config_dir

from verl_lint.launch.locate import locate_app
from verl_lint.launch.recognise import launches
from verl_lint.shell import evaluate

BENCH = Path(__file__).resolve().parent.parent / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))
import make_corpus  # noqa: E402


def _load_bench_run():
    spec = importlib.util.spec_from_file_location("verl_lint_bench_run", BENCH / "run.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


bench = _load_bench_run()

SEED = 0
DEFAULT_SAMPLE = {NEWEST: 32, OLDER: 14, OLDEST: 14}


def _sample_size(version: str) -> int | None:
    raw = os.environ.get("VERL_LINT_EQUIV_SAMPLE", "")
    if raw == "all":
        return None
    if raw.isdigit():
        return int(raw)
    return DEFAULT_SAMPLE[version]


def _slots(version: str) -> int:
    n = _sample_size(version)
    return 200 if n is None else n


@pytest.fixture(scope="module")
def corpus(verl_trees, tmp_path_factory):
    """(corpus dir, specs, keys) for the seed-0 corpus, generated once per test run."""
    config_dir = verl_trees[NEWEST].root / "verl" / "trainer" / "config"
    keys = make_corpus.compose_keys(config_dir)
    out = tmp_path_factory.mktemp("corpus")
    specs = make_corpus.generate(out, config_dir, seed=SEED, keys=keys)
    return out, specs, keys


def _stratified(specs, n: int | None, seed: int, errors_first: bool = True) -> list[tuple[int, int]]:
    """(script index, launch index) pairs: every launch with a planted error (`errors_first`),
    one launch of every (base, --config-name) kind, then a seeded random fill; in corpus order."""
    everything = [(i, j) for i, s in enumerate(specs) for j in range(len(s.launches))]
    if n is None or n >= len(everything):
        return everything
    chosen: list[tuple[int, int]] = []
    seen_kinds = set()
    for i, j in everything:
        la = specs[i].launches[j]
        kind = (la.base, la.config_name)
        if (errors_first and la.errors) or kind not in seen_kinds:
            chosen.append((i, j))
            seen_kinds.add(kind)
    rest = [x for x in everything if x not in chosen]
    rng = random.Random(seed)
    chosen += rng.sample(rest, max(0, min(len(rest), n - len(chosen))))
    return sorted(chosen[:n])


@pytest.fixture(scope="module")
def cases(corpus, verl_trees):
    """cases(version) -> [bench.Item] for the sampled launches, through the real front end
    (once per version, when a test first needs it)."""
    out_dir, specs, _ = corpus

    @functools.cache
    def of(version: str) -> list:
        # 0.9.1: every planted error; older releases (older keys: errors come anyway): an unbiased sample
        picked = _stratified(specs, _sample_size(version), SEED + (version != NEWEST), errors_first=version == NEWEST)
        scripts = sorted({i for i, _ in picked})
        items, problems, _ = bench.front_end(out_dir, [specs[i] for i in scripts], verl_trees[version])
        assert not problems, problems
        by_script: dict[str, list] = {}
        for it in items:
            by_script.setdefault(it.script, []).append(it)
        return [by_script[specs[i].path][j] for i, j in picked]

    return of


@pytest.mark.slow  # generating the corpus and composing it twice takes minutes
@pytest.mark.parametrize("version,slot", [(v, k) for v in (NEWEST, OLDER, OLDEST) for k in range(_slots(v))])
def test_launch_composes_like_hydra(version, slot, cases, composer):
    items = cases(version)
    if slot >= len(items):
        pytest.skip("the corpus has fewer launches than slots")
    it = items[slot]
    where = f"{it.script}:{it.launch.entry_span.line} (verl {version})"
    with composer.lending():  # as `check` composes: on the base itself, lent to every launch before
        fast = bench.lint_outcome(composer.compose(it.app, it.launch.overrides, it.launch.entry_span), it.launch)
    with initialize_config_dir(config_dir=str(it.app.config_dirs[-1]), version_base=None, job_name="main_ppo"):
        plain = bench.hydra_outcome(it.app.config_name, it.words)
    why = bench.compare(plain, fast)
    if why:
        pytest.fail(f"{where}: {why}\n  words: {it.words}")
    if version == NEWEST:
        # The corpus is what it claims: keys drawn from 0.9.1 only fail where an error was planted,
        # and Hydra's first error is the one the generator predicted.
        expected = it.spec.first_error
        if expected is None:
            assert plain.ok, f"{where}: unplanned Hydra error {plain.error_type}: {plain.message}"
        else:
            assert not plain.ok, f"{where}: planted {expected.kind} at word {expected.word} but Hydra composes"
            assert plain.error_word == expected.word, (
                f"{where}: Hydra's first error {plain.message!r} is not the planted {expected}"
            )


def simple_overrides_read(lines) -> int:
    """How many of `lines` hydra_api.simple_override reads, asserting that each gives the very
    Override Hydra's parser gives, value type included."""
    from verl_lint.config import hydra_api

    read = 0
    for line in lines:
        fast = hydra_api.simple_override(line)
        if fast is not None:
            read += 1
            [hydra] = hydra_api.PARSER.parse_overrides([line])
            assert fast == hydra and type(fast._value) is type(hydra._value), line
    return read


@pytest.mark.slow
def test_simple_overrides_of_the_corpus_are_read_as_hydras_parser_reads_them(corpus):
    """Every override line of the bench corpus that hydra_api.simple_override reads (most of them)
    gives the very Override Hydra's parser gives, value type included."""
    _, specs, _ = corpus
    lines = sorted({w for s in specs for la in s.launches for w in la.words})
    assert simple_overrides_read(lines) > len(lines) // 2


@pytest.mark.slow
def test_corpus_size_and_mix(corpus):
    _, specs, _ = corpus
    launches = [la for s in specs for la in s.launches]
    assert len(specs) >= 140 and len(launches) >= 150
    assert sum(1 for s in specs if len(s.launches) == 2) >= 40
    bases = {la.base for la in launches}
    assert {"dp", "megatron_cn", "megatron_engine", "megatron_critic", "torchtitan"} <= bases
    assert 8 <= sum(1 for la in launches if la.errors) <= 30
    words = [w for la in launches for w in la.words]
    assert any(w.startswith("++") for w in words) and any(w.startswith("~") for w in words)
    assert any(w.startswith("+") and not w.startswith("++") for w in words)
    assert any("[" in w for w in words) and any("'" in w for w in words)
    texts = [(la, la.argv) for la in launches]
    assert any(argv[0] == "ray" for _, argv in texts)


@pytest.mark.slow
def test_corpus_is_deterministic(corpus, tmp_path):
    out_dir, specs, keys = corpus
    again = make_corpus.generate(tmp_path / "again", out_dir, seed=SEED, keys=keys)
    assert [(s.path, [la.argv for la in s.launches]) for s in again] == [
        (s.path, [la.argv for la in s.launches]) for s in specs
    ]
    for s in specs[:: max(1, len(specs) // 20)]:
        assert (tmp_path / "again" / s.path).read_text() == (out_dir / s.path).read_text()
    other = make_corpus.generate(tmp_path / "other", out_dir, seed=SEED + 1, n_scripts=10, n_launches=12, keys=keys)
    assert [la.argv for s in other for la in s.launches] != [la.argv for s in specs[:10] for la in s.launches][:12]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_manifest_words_are_what_bash_produces(corpus):
    """The manifest (and so the words verl-lint's shell must produce) matches real bash.

    Only the generated scripts run, with python/python3/ray/tee replaced by stubs that
    record their argv; the scripts themselves only assign variables and call those.
    """
    out_dir, specs, _ = corpus
    sample = specs[::3] if os.environ.get("VERL_LINT_EQUIV_SAMPLE") != "all" else specs
    assert make_corpus.check_bash(out_dir, sample) == []


# Hand-written launches, each a one-launch script composed against every release in RELEASES:
# Hydra's override grammar and composition rules, given as the words Hydra gets (quoted into the
# script, and checked to come out of the shell unchanged) ...
R = "actor_rollout_ref.rollout"
A = "actor_rollout_ref.actor"
WORDS = [
    [],
    ["model_engine=megatron"],
    ["actor@actor_rollout_ref.actor=megatron_actor"],
    ["actor@actor_rollout_ref.actor=megatron_actor", "ref@actor_rollout_ref.ref=megatron_ref", "trainer.nnodes=2"],
    ["+trainer.brand_new=1", "+new_top.a.b=[1,2]", "++trainer.nnodes=2", "++trainer.brand_new=3"],
    ["+trainer.nnodes=2"],
    ["~trainer.nnodes", "~trainer.n_gpus_per_node=8"],
    ["~trainer.nnodes=7"],
    ["~trainer.does_not_exist"],
    ["~trainer.val_before_train"],
    ["trainer.nonexistent=1"],
    ["trainer.logger=[console,wandb]"],
    ["trainer.logger=[console,wandb]", 'trainer.logger=["console","wandb"]'],
    ["data=does_not_exist"],
    ["data={a:1}"],
    ["trainer.nnodes=choice(1,2)"],
    ["trainer.nnodes=[1,2"],
    ["actor_rollout_ref.actor.optim=null", "critic.optim={}"],
    [
        "trainer.nnodes=int(3.0)",
        "trainer.n_gpus_per_node=str(10)",
        "actor_rollout_ref.actor.optim.lr=1.0e3",
        "trainer.project_name=",
        "trainer.experiment_name=a\\,b",
        "trainer.default_local_dir=${now:%Y}",
    ],
    ["critic=megatron_critic"],
    ["critic@critic=megatron_critic", "critic.ppo_epochs=2"],
    ["+critic=megatron_critic"],
    ["~actor@actor_rollout_ref.actor"],
    ["+ref@extra_ref=dp_ref"],
    ["++data=legacy_data"],
    ["data@data=legacy_data", "data.train_batch_size=8"],
    ["~reward@reward"],
    ["trainer.nnodes=2", "trainer.nnodes=4", "+trainer.nnodes=5"],
    ["trainer.total_epochs=1", "trainer.total_epochs=2"],
    ["trainer={nnodes:3}"],
    ["model_engine=torchtitan"],
    ["model_engine=megatron", "model_engine=dp"],
    ["model_engine=dp,megatron", "trainer.nnodez=1"],
    ["trainer.nnodez=3", "trainer.nnodes=1,2"],
    ["critic=fsdp2_critic", "trainer.nnodes=1,2"],
    ["trainer.nnodes=[1,2", "model_engine=deepspeed"],
    ["hydra.run.dir=/tmp/a", "hydra.run.dir=/tmp/b", "hydra.job.chdir=True", "trainer.nnodes=3"],
    [
        "+hydra.callbacks.lint._target_=mylint.Cb",
        "+hydra.job.env_set.FOO=1",
        "~trainer.val_before_train",
        "+trainer.val_before_train=false",
    ],
    ["hydra.callbacks.lint._target_=mylint.Cb"],
    ["hydra/launcher=basic", "trainer.nnodes=2"],
    ["hydra.foo=1", "trainer.nonexistent=2"],
    ["trainer.nonexistent=2", "hydra.foo=1"],
    ["trainer.nnodez=3", "hydra.job.chdir=maybe"],
    ["data.train_batch_size=512", f"{R}.n=8"],
    [f"+{R}.engine_kwargs.vllm.enable_expert_parallel=True"],
    [f"++{R}.engine_kwargs.vllm.max_num_seqs=64", f"++{A}.ppo_mini_batch_size=32"],
    [f"{A}.optim.lr=1e-6", f"{A}.optim.weight_decay=0.01"],
    ["algorithm.adv_estimator=grpo", f"{A}.use_kl_loss=True", f"{A}.kl_loss_coef=0.001"],
    [f"{R}.tensor_model_parallel_size=4", f"{R}.gpu_memory_utilization=0.5", f"{R}.name=vllm"],
    [f"+{R}.enable_sleep_mode=False"],
    [f"{R}.val_kwargs.temperature=0.6", f"{R}.val_kwargs.do_sample=True"],
    ["trainer.default_local_dir=/ckpt/run-1", "trainer.resume_mode=disable"],
    ["+ray_kwargs.ray_init.runtime_env.env_vars.VLLM_USE_V1=1"],
    ["data.train_files=[/a.parquet,/b.parquet]"],
    ["trainer.nnodes=2", "trainer.n_gpus_per_node=8", "+trainer.new_key={a:1,b:[1,2]}"],
    [f"~{R}.val_kwargs", f"++{R}.val_kwargs={{n:1}}"],
]
# ... and the shell forms scripts use, given as script text (the shell decides the words).
SHELL = [
    '\'trainer.logger=["console","wandb"]\'',
    "trainer.project_name='my project'",
    'trainer.experiment_name="a,b"',
    "data.max_prompt_length=$((1024*2)) data.max_response_length=$((1024 * 8))",
    "--config-name ppo_megatron_trainer actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2",
]
HAND_WRITTEN = [(shlex.join(w), w) for w in WORDS] + [(text, None) for text in SHELL]


@pytest.mark.slow  # two compositions per launch: ~1 s each, 61 launches per release
@pytest.mark.parametrize("version", across_releases())
@pytest.mark.parametrize("text,words", HAND_WRITTEN, ids=[t[:70] or "defaults" for t, _ in HAND_WRITTEN])
def test_hand_written_launch_composes_like_hydra(text, words, version, verl_trees, composer, tmp_path):
    script = f"python3 -m verl.trainer.main_ppo {text}\n"
    p = tmp_path / "s.sh"
    p.write_text(script)
    [la] = launches(evaluate(str(p), script).commands, str(p))
    if words is not None:
        assert [w.text for w in la.overrides] == words
    app = locate_app(la, verl_trees[version])
    with composer.lending():  # as `check` composes: on the base itself, lent to every launch before
        fast = bench.lint_outcome(composer.compose(app, la.overrides, la.entry_span), la)
    with initialize_config_dir(config_dir=str(app.config_dirs[-1]), version_base=None, job_name="main_ppo"):
        plain = bench.hydra_outcome(app.config_name, [w.text for w in la.overrides])
    why = bench.compare(plain, fast)
    if why:
        pytest.fail(f"verl {version}: {why}\n  words: {[w.text for w in la.overrides]}")
