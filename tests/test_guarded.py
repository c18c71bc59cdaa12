"""VL233 key-read-only-under-off-condition: the reads of a key and the conditions around them,
found in a tree's code (config/guards.py), on a small tree written here and on real releases."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import across_releases

from verl_lint.config.guards import Sources
from verl_lint.registry import main_ppo


def _sources(tmp_path: Path, code: str) -> Sources:
    pkg = tmp_path / "tree" / "verl" / "trainer"
    pkg.mkdir(parents=True)
    (pkg / "trainer.py").write_text(code)
    return Sources(tmp_path / "tree")


def _guards(read) -> list[tuple[str, bool]]:
    return [(text, want) for _, want, text in read.guards]


def test_conditions_around_each_read(tmp_path):
    src = _sources(
        tmp_path,
        "def fit(self, config):\n"
        '    """kl_ctrl in a docstring is no read."""\n'
        "    if config.algorithm.use_kl_in_reward:\n"
        "        a = config.algorithm.kl_ctrl\n"
        "    elif config.algorithm.mode == 'x':\n"
        "        b = config.algorithm['kl_ctrl']\n"
        "    else:\n"
        "        c = config.algorithm.get('kl_ctrl')\n"
        "    d = config.flag and getattr(config.algorithm, 'kl_ctrl')\n"
        "    e = config.algorithm.kl_ctrl if not config.off else None\n"
        "    if config.algorithm.use_kl_in_reward:\n"
        "        def later():\n"
        "            return config.algorithm.kl_ctrl\n"
        "    kl_ctrl = make(kl_ctrl=1)\n"
        "    core.kl_ctrl(kl_ctrl)\n"
        "    config.algorithm.kl_ctrl = None\n"
        "    config.algorithm.kl_ctrl += 1\n"
        "    replace(config.algorithm, kl_ctrl=None)\n"
        "    log('kl_ctrl is off')\n",
    )
    uses = src.uses("kl_ctrl")
    got = [(r.line, r.chain, _guards(r)) for r in uses.reads]
    assert got == [
        (4, ("config", "algorithm", "kl_ctrl"), [("config.algorithm.use_kl_in_reward", True)]),
        (
            6,
            ("config", "algorithm", "kl_ctrl"),
            [("config.algorithm.use_kl_in_reward", False), ("config.algorithm.mode == 'x'", True)],
        ),
        (
            8,
            ("config", "algorithm", "kl_ctrl"),
            [("config.algorithm.use_kl_in_reward", False), ("config.algorithm.mode == 'x'", False)],
        ),
        (9, ("config", "algorithm", "kl_ctrl"), [("config.flag", True)]),
        (10, ("config", "algorithm", "kl_ctrl"), [("not config.off", True)]),
        (13, ("config", "algorithm", "kl_ctrl"), []),  # a function body runs when called
        (17, ("config", "algorithm", "kl_ctrl"), []),  # reads as well as assigns
        (19, None, []),  # a string naming the key: not followed, it may be a read
    ]
    assert uses.writes == ("verl/trainer/trainer.py:16", "verl/trainer/trainer.py:17", "verl/trainer/trainer.py:18")
    # Variables, keyword arguments and called functions of that name are not reads.


def test_an_early_exit_guards_the_rest_of_its_block(tmp_path):
    src = _sources(
        tmp_path,
        "def f(config):\n"
        "    if not config.use_kl_loss:\n"
        "        return 0\n"
        "    for x in y:\n"
        "        if x.skip:\n"
        "            log()\n"
        "            continue\n"
        "        a = config.kl_loss_coef\n"
        "    if config.other:\n"
        "        if config.deeper:\n"
        "            return 1\n"  # not every path of the if exits
        "    b = config.kl_loss_coef\n",
    )
    got = [(r.line, _guards(r)) for r in src.uses("kl_loss_coef").reads]
    assert got == [
        (8, [("not config.use_kl_loss", False), ("x.skip", False)]),
        (12, [("not config.use_kl_loss", False)]),
    ]


def test_unparseable_file_may_read_anything(tmp_path):
    src = _sources(tmp_path, "if config.x:\n    config.kl_ctrl\n(((\n")
    [r] = src.uses("kl_ctrl").reads
    assert r.chain is None and r.guards == ()


def _found(report, code="VL233"):
    return [d for d in report.diagnostics if d.code == code]


KL_IN_REWARD = "\n".join(
    [
        "#!/bin/bash",
        "python3 -m verl.trainer.main_ppo \\",
        "    trainer.nnodes=1 \\",
        "    algorithm.kl_ctrl.kl_coef=0.01 \\",
        "    actor_rollout_ref.actor.kl_loss_type=mse",
        "",
    ]
)


def test_the_last_override_of_a_key_is_located(lint):
    script = main_ppo("algorithm.kl_ctrl.kl_coef=0", "trainer.nnodes=1", "algorithm.kl_ctrl.kl_coef=0.1")
    [d] = _found(lint(script))
    line = script.splitlines()[1]
    assert (d.span.line, d.span.col) == (2, line.index("algorithm.kl_ctrl.kl_coef=0.1") + 1)


@pytest.mark.parametrize("version", [*across_releases(), pytest.param("0.4.1", marks=pytest.mark.slow)])
def test_derived_from_the_release(lint, version):
    """What VL219 and VL220 said by hand, derived from each release's own code."""
    r = lint(KL_IN_REWARD, version)
    found = sorted(_found(r), key=lambda d: d.span.line)
    assert [(d.span.line, d.span.col, d.key) for d in found] == [
        (4, 5, "algorithm.kl_ctrl.kl_coef"),
        (5, 5, "actor_rollout_ref.actor.kl_loss_type"),
    ], [d.message for d in r.diagnostics]
    kl, loss = found
    assert (
        f"verl {version} reads `algorithm.kl_ctrl`, the node above `algorithm.kl_ctrl.kl_coef`, only when" in kl.message
    )
    assert "use_kl_in_reward` is true (verl/trainer/ppo/ray_trainer.py:" in kl.message
    assert "`algorithm.use_kl_in_reward=False` (the default)" in kl.message
    assert "`actor_rollout_ref.actor.use_kl_loss=False` (the default)" in loss.message


@pytest.mark.parametrize("version", across_releases())
def test_silent_when_the_condition_holds_or_is_unknown(lint, version):
    on = KL_IN_REWARD.replace(
        "trainer.nnodes=1", "algorithm.use_kl_in_reward=True actor_rollout_ref.actor.use_kl_loss=True"
    )
    assert _found(lint(on, version)) == []
    # Turned off by the user: a template's leftover, not a mistake.
    off = KL_IN_REWARD.replace(
        "trainer.nnodes=1", "algorithm.use_kl_in_reward=False actor_rollout_ref.actor.use_kl_loss=False"
    )
    assert _found(lint(off, version)) == []
    # Known only at run time.
    unknown = KL_IN_REWARD.replace(
        "trainer.nnodes=1", "algorithm.use_kl_in_reward=$KL actor_rollout_ref.actor.use_kl_loss=$KL"
    )
    assert _found(lint(unknown, version)) == []
    # What happens anyway, also when a later override says so.
    assert _found(lint(main_ppo("algorithm.kl_ctrl.kl_coef=0"), version)) == []
    assert _found(lint(main_ppo("algorithm.kl_ctrl.kl_coef=0.1", "algorithm.kl_ctrl.kl_coef=0"), version)) == []


def test_a_script_passing_its_arguments_on_is_judged_as_written(lint):
    """`"$@"` lets the caller add overrides, but the switch the script leaves at verl's default is
    off when it runs as written (Logic-RL's kl_loss_coef without use_kl_loss, verl's own examples'
    kl_ctrl.kl_coef without use_kl_in_reward): reported, saying the caller could turn it on; the
    switch the script sets itself is judged as ever."""
    passing = KL_IN_REWARD.replace("kl_loss_type=mse", 'kl_loss_type=mse "$@"')
    kl, loss = _found(lint(passing))
    assert (kl.key, loss.key) == ("algorithm.kl_ctrl.kl_coef", "actor_rollout_ref.actor.kl_loss_type")
    assert '`algorithm.use_kl_in_reward=False` (the default, unless the caller\'s "$@" sets it)' in kl.message
    on = passing.replace("trainer.nnodes=1", "algorithm.use_kl_in_reward=True")
    assert [(d.key, d.message) for d in _found(lint(on))] == [(loss.key, loss.message)]
    assert "(the default)" in _found(lint(KL_IN_REWARD))[0].message  # no "$@", no caller to name


def test_a_dotted_string_names_each_key(tmp_path):
    src = _sources(
        tmp_path,
        "def f(config):\n    if config.on:\n        return OmegaConf.select(config, 'algorithm.kl_ctrl')\n    return config['algorithm.kl_ctrl']\n",
    )
    got = [(r.line, r.chain, _guards(r)) for r in src.uses("kl_ctrl").reads]
    assert got == [(3, ("config", "algorithm", "kl_ctrl"), [("config.on", True)]), (4, None, [("config.on", False)])]


def test_a_read_other_sections_fit_too_says_so(lint):
    """verl 0.9.1 reads `mtp.speculative_num_steps` through the sglang server's `self.config`,
    which the actor's and the critic's `model` nodes both fit: no effect either way, but turning
    on `enable_rollout` under the critic would not make it read."""
    [d] = _found(lint(main_ppo("critic.model.mtp.speculative_num_steps=3")))
    assert "(in code that may be given another section with the same keys)" in d.message
    assert "`critic.model.mtp.enable_rollout=False` (the default)" in d.message
    assert d.help.startswith("remove the override: nothing else reads it")


def test_the_files_that_mention_a_name_come_from_the_word_index_as_from_a_scan(tmp_path, verl_trees):
    """A name's files are looked up in an index of every word of the tree (built once, kept on
    disk) instead of scanning every file per name: the same files as the scan, for names in words
    glued to digits or dots, a prefix or suffix of longer names, and a name no file has."""
    import re

    (tmp_path / "tree" / "verl" / "trainer").mkdir(parents=True)
    files = {
        "a.py": "x = cfg.kl_coef\ny = cfg['use_kl_loss']\n",
        "b.py": "z = 1  # 2kl_coef, kl_coef2, my_kl_coef\n",  # none of them is the word
        "c.py": "w = config.actor.kl_coef.real\n",
    }
    for name, text in files.items():
        (tmp_path / "tree" / "verl" / "trainer" / name).write_text(text)
    small = Sources(tmp_path / "tree")
    assert [f.name for f in small.mentioning("kl_coef")] == ["a.py", "c.py"]
    assert [f.name for f in small.mentioning("use_kl_loss")] == ["a.py"]
    assert small.mentioning("kl") == [] and small.mentioning("real") == [small.files[2]]

    src = Sources(verl_trees["0.9.1"].root)
    for name in ("kl_coef", "use_kl_loss", "micro_batch_size", "tensor_model_parallel_size", "total_epochs", "n", "lr"):
        word = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])")
        assert src.mentioning(name) == [f for f in src.files if word.search(f.read_text(errors="replace"))], name


def test_a_name_is_found_where_it_stands_as_a_word(verl_trees):
    """`word_starts` (str.find: a regex opening with a lookbehind cannot search for its literal)
    finds a name where a regex with ASCII word boundaries does: glued to digits, `_` or letters
    on either side it is no word, beside a dot, a quote or a non-ASCII letter it is; at the text's
    start and end; over every file of a release for names of several lengths."""
    import re

    from verl_lint.config.guards import word_starts

    def expected(name: str, text: str) -> list[int]:
        return [m.start() for m in re.finditer(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text)]

    small = "kl x.kl 2kl kl2 _kl kl_ 'kl' ékl klé kl.kl klkl kl"
    assert list(word_starts("kl", small)) == expected("kl", small) == [0, 5, 25, 30, 33, 37, 40, 48]
    assert list(word_starts("é", "é aé é")) == expected("é", "é aé é") == [0, 5]
    assert list(word_starts("kl", "")) == [] and list(word_starts("", "abc")) == []
    src = Sources(verl_trees["0.9.1"].root)
    for name in ("kl_coef", "n", "lr", "micro_batch_size", "enable"):
        for f in src.files[::7]:
            text = f.read_text(errors="replace")
            assert list(word_starts(name, text)) == expected(name, text), (name, f)
