"""The reader index (which key names a verl tree's code reads) and the rules built on it,
VL230 key-never-read and VL231 config-key-never-read, on real verl releases."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import OLDEST, RELEASES, across_releases, codes, json_findings

from verl_lint.config.reader import build, reader_index
from verl_lint.registry import main_ppo


@pytest.mark.slow
@pytest.mark.parametrize(
    "version", across_releases(fails_on_oldest="verl 0.5.0 has no engine_kwargs or lora node (issue #19)")
)
def test_index_of_a_real_release(verl_trees, version):
    ix = reader_index(verl_trees[version].root)
    for name in (
        "ppo_mini_batch_size",
        "log_prob_micro_batch_size_per_gpu",
        "use_kl_in_reward",
        "actor_rollout_ref",
        "kl_ctrl",
    ):
        assert ix.reads(name), name
    for name in ("no_such_knob", "ppo_mini_batch_sise", "log_prob_micro_batch_sise_per_gpu"):
        assert not ix.reads(name), name
    # Nodes verl hands on whole: the free-form dict fields it never checks.
    assert {"engine_kwargs", "override_config", "lora"} <= ix.whole
    assert not {"actor", "rollout", "data", "model", "critic"} & ix.whole


def _tree(tmp_path: Path) -> Path:
    pkg = tmp_path / "tree" / "verl"
    (pkg / "trainer" / "config").mkdir(parents=True)
    (pkg / "tests").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "trainer" / "worker.py").write_text(
        "from dataclasses import dataclass, field\n"
        "@dataclass\n"
        "class RolloutConfig:\n"
        "    temperature: float = 1.0\n"
        "    engine_kwargs: dict = field(default_factory=dict)\n"
        "def run(config, role):\n"
        "    a = config.actor.ppo_mini_batch_size\n"
        "    b = config.get('use_kl_in_reward', False)\n"
        "    c = getattr(config, f'{role}_micro_batch_size_per_gpu')\n"
        "    name = f'{role}_max_token_len'\n"
        "    e = config.get(name)\n"
        "    load_lora(lora_name=f'warmup_{lora_id}', style=1)\n"
        "    metrics[f'{role}_std'] = 0.0\n"
        "    d = OmegaConf.select(config, 'algorithm.kl_penalty')\n"
        "    LLM(**OmegaConf.to_container(config.rollout.sampling_extras))\n"
        "    for k, v in config.reward_cfg_extra.items():\n"
        "        pass\n"
        "    for k, v in self.layers.items():\n"
        "        pass\n"
    )
    (pkg / "trainer" / "config" / "ppo.yaml").write_text(
        "critic:\n  ppo_epochs: ${actor_rollout_ref.actor.ppo_epochs_read_by_interp}\n"
    )
    (pkg / "tests" / "test_x.py").write_text("config.only_a_test_reads_this\n")
    return tmp_path / "tree"


def test_what_counts_as_read(tmp_path):
    ix = build(_tree(tmp_path))
    for name in (
        "ppo_mini_batch_size",
        "use_kl_in_reward",
        "kl_penalty",
        "algorithm",
        "temperature",
        "ppo_epochs_read_by_interp",
    ):
        assert ix.reads(name), name
    assert ix.reads("ppo_micro_batch_size_per_gpu") is False  # `ppo` is not a read name: the f-string does not build it
    assert ix.reads("actor_micro_batch_size_per_gpu")  # `actor` is
    assert ix.reads("actor_max_token_len")  # an f-string assigned to a name that is used as a key
    # f-strings that name no key read: a keyword's value, a key written into a metrics dict
    assert ix.reads("style") and ix.reads("actor")
    assert not ix.reads("warmup_style") and not ix.reads("actor_std")
    assert not ix.reads("only_a_test_reads_this")  # tests/ is not verl's code
    # A dict field, a node unpacked into a call, a node iterated: their keys are all read.
    assert {"engine_kwargs", "sampling_extras", "reward_cfg_extra"} <= ix.whole
    assert "layers" not in ix.whole  # iterated, but not reached from a config object


def test_reads_per_section(tmp_path):
    """Which node a key is read from: the steps code takes (`x.critic.optim`, `["c"]`,
    `.get("c")`, `getattr(p, "c")`, `"c" in x.p`, a variable named for the node, an
    interpolation); a read through a receiver named for no node proves nothing about the node."""
    pkg = tmp_path / "tree" / "verl"
    (pkg / "trainer" / "config").mkdir(parents=True)
    (pkg / "trainer" / "fit.py").write_text(
        "def fit(config, critic_cfg):\n"
        "    lr = config.critic.optim.lr\n"
        "    a = config['actor_rollout_ref'].get('rollout', {}).get('n')\n"
        "    b = getattr(config.algorithm, 'kl_ctrl')\n"
        "    if 'gamma' in config.algorithm:\n"
        "        pass\n"
        "    c = critic_cfg.checkpoint\n"
        "    d = self.config.profiler\n"
        "def use_remove_padding(model):\n"
        "    return shard_model(model)\n"
    )
    (pkg / "trainer" / "config" / "ppo.yaml").write_text("x: ${data.train_batch_size}\n")
    ix = build(tmp_path / "tree")
    for parent, name in (
        ("critic", "optim"),
        ("optim", "lr"),
        ("actor_rollout_ref", "rollout"),
        ("rollout", "n"),
        ("algorithm", "kl_ctrl"),
        ("algorithm", "gamma"),
        ("critic", "checkpoint"),
        ("data", "train_batch_size"),
    ):
        assert ix.reads_under(parent, name), (parent, name)
    assert not ix.reads_under("actor_rollout_ref", "critic")  # `critic` is read, from the root
    assert not ix.reads_under("actor", "profiler")  # `self.config.profiler`: which node `self.config` is is not known
    # ... `reads_at` places it by what else the same receiver reads in the same class or function.
    keys = {(): {"trainer", "critic", "actor"}, ("actor",): {"profiler", "lr", "clip", "epochs"}, ("critic",): {"lr"}}
    placed = build_text(
        tmp_path / "placed",
        "class ActorWorker:\n"
        "    def f(self):\n"
        "        return self.config.lr, self.config.clip, self.config.epochs, self.config.profiler.on\n"
        "def g(config):\n"
        "    return config.trainer.x, config.critic.lr\n",
    )
    assert placed.reads_at(("actor",), "profiler", keys.get)  # the actor has `lr`, `clip` and `epochs`
    assert not placed.reads_at(("critic",), "profiler", keys.get)  # the critic lacks two of them
    assert placed.reads_at(("critic",), "lr", keys.get) and not placed.reads_at(("trainer",), "lr", keys.get)
    # A function named like a key, or called, is no read of that name; a parameter is.
    assert not ix.reads("use_remove_padding") and not ix.reads("shard_model") and ix.reads("model")


def build_text(root: Path, text: str):
    """The index of a tree whose verl/ holds one module with `text`."""
    (root / "verl").mkdir(parents=True)
    (root / "verl" / "m.py").write_text(text)
    return build(root)


def test_disk_cache_follows_the_files(tmp_path, monkeypatch):
    monkeypatch.setenv("VERL_LINT_CACHE_DIR", str(tmp_path / "cache"))
    root = _tree(tmp_path)
    monkeypatch.setattr("verl_lint.config.reader._LOADED", {})
    assert not reader_index(root).reads("brand_new_knob")
    assert list((tmp_path / "cache" / "reader").glob("*.pickle"))
    f = root / "verl" / "trainer" / "worker.py"
    f.write_text(f.read_text() + "x = config.brand_new_knob\n")
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 1_000_000))
    monkeypatch.setattr("verl_lint.config.reader._LOADED", {})  # a new process
    assert reader_index(root).reads("brand_new_knob")


def test_a_projects_own_files_add_no_facts_about_keys(tmp_path, monkeypatch):
    """The facts about keys (deprecated keys, choices) come from the tree's verl/ alone, so
    `key_facts` (read at every Hydra job start) never loads the index a project's entry point
    joins: its answer is the joined index's."""
    from verl_lint.config.reader import key_facts

    monkeypatch.setenv("VERL_LINT_CACHE_DIR", str(tmp_path / "cache"))
    warns = 'def f(config):\n    if config.data.get("{0}", None) is not None:\n        print("WARNING: {0} is deprecated.")\n'
    root = _tree(tmp_path).resolve()
    (root / "verl" / "trainer" / "old.py").write_text(warns.format("vbs"))
    proj = tmp_path / "proj" / "mypkg"
    proj.mkdir(parents=True)
    (proj / "__init__.py").write_text(warns.format("project_vbs"))
    joined = build(root, (proj.resolve(),))
    assert [d.key for d in joined.deprecated] == ["data.vbs"] and joined.reads("project_vbs")
    assert key_facts(root) == (joined.deprecated, joined.choices)
    (root / "verl" / "trainer" / "new.py").write_text(warns.format("project_vbs"))  # the same code in verl/ counts
    assert [d.key for d in build(root).deprecated] == ["data.project_vbs", "data.vbs"]


def test_a_project_edit_never_indexes_the_verl_tree_again(tmp_path, monkeypatch, capsys):
    """A project's own files (its package, its config dirs) are indexed apart from the verl tree
    (issue #36, item 3): a comment added to the project's YAML, or a second project, reads the
    tree's index from the cache; only the project's part is read again. The index is the same
    as one built over both at once."""
    from verl_lint.terminal import show_progress

    monkeypatch.setenv("VERL_LINT_CACHE_DIR", str(tmp_path / "cache"))
    root = _tree(tmp_path).resolve()
    proj = tmp_path / "proj"
    (proj / "mypkg").mkdir(parents=True)
    (proj / "mypkg" / "__init__.py").write_text("def fit(config):\n    return config.trainer.project_knob\n")
    (proj / "config").mkdir()
    (proj / "config" / "base.yaml").write_text("trainer:\n  depth: ${data.project_interp}\n")
    extra = ((proj / "mypkg").resolve(), (proj / "config").resolve())
    tree_note = f"verl-lint: indexing verl tree at {root} (first run for this tree)\n"
    show_progress(True)  # as the command line does: the note is what a user sees
    try:
        first = reader_index(root, extra)
        assert capsys.readouterr().err == tree_note
        assert first == build(root, extra) and first.reads("project_knob") and "project_interp" in first.interpolated
        assert first.deprecated == build(root).deprecated and first.files == build(root).files + 2
        yaml = proj / "config" / "base.yaml"
        yaml.write_text("# a comment\n" + yaml.read_text() + "  width: ${data.new_interp}\n")
        monkeypatch.setattr("verl_lint.config.reader._LOADED", {})  # a new process
        edited = reader_index(root, extra)
        assert capsys.readouterr().err == ""  # the tree's part came from the cache
        assert edited == build(root, extra) and "new_interp" in edited.interpolated
        other = tmp_path / "other" / "pkg"
        other.mkdir(parents=True)
        (other / "__init__.py").write_text("x = cfg.other_knob\n")
        monkeypatch.setattr("verl_lint.config.reader._LOADED", {})
        assert reader_index(root, (other.resolve(),)).reads("other_knob") and capsys.readouterr().err == ""
    finally:
        show_progress(False)
    assert not reader_index(root).reads("project_knob")  # the tree's own index is the tree's alone


def _found(report, code):
    return [d for d in report.diagnostics if d.code == code]


@pytest.mark.slow
@pytest.mark.parametrize(
    "version", across_releases(fails_on_oldest="verl 0.5.0 builds no dataclass configs: VL230, not VL110 (issue #19)")
)
def test_key_never_read_is_located(lint, version):
    script = (
        "#!/bin/bash\n"
        "python3 -m verl.trainer.main_ppo \\\n"
        "    trainer.nnodes=1 \\\n"
        "      +actor_rollout_ref.actor.no_such_knob=1 \\\n"
        "    +actor_rollout_ref.model.override_config.foo=1 \\\n"
        "    +actor_rollout_ref.rollout.engine_kwargs.vllm.swap_space=4 \\\n"
        "    ++ray_kwargs.ray_init.runtime_env.env_vars.NCCL_DEBUG=INFO \\\n"
        "    +trainer.capture-range-end=stop\n"  # not an identifier: only data could read it, not judged
    )
    r = lint(script, version)
    assert not r.errors, r.errors
    assert _found(r, "VL230") == []  # the stronger finding on the same override wins:
    [d] = _found(r, "VL110")
    assert (d.span.line, d.span.col, d.span.end_col) == (4, 7, 7 + len("+actor_rollout_ref.actor.no_such_knob=1"))
    assert "which verl builds into FSDPActorConfig" in d.message and "has no field `no_such_knob`" in d.message


@pytest.mark.parametrize("version", across_releases())
def test_key_never_read_outside_dataclass_nodes_is_ignored(lint, version):
    [d] = _found(lint(main_ppo("+trainer.unknown_thing.sub=3"), version), "VL230")
    assert (
        d.message
        == f"nothing in verl {version} reads `trainer.unknown_thing.sub`: the value is accepted by Hydra and ignored"
    )


@pytest.mark.parametrize("version", across_releases())
def test_an_unread_key_added_as_off_is_silent(lint, version):
    """`+flag=False` (0, null, ""): code that never reads it behaves as if it were off, as asked
    (VL233's rule for keys read under an off condition); unless it is a slip for a read key that
    is on: `trainer.val_before_train` is true by default."""
    off = (
        "+trainer.no_such_flag=False",
        "+trainer.no_such_count=0",
        "+trainer.no_such_path=null",
        "+trainer.no_such_name=''",
    )
    assert _found(lint(main_ppo(*off), version), "VL230") == []
    on, slip = _found(lint(main_ppo("+trainer.no_such_flag=True", "+trainer.val_before_trian=False"), version), "VL230")
    assert on.key == "trainer.no_such_flag"
    assert (slip.key, slip.help) == ("trainer.val_before_trian", "did you mean `trainer.val_before_train`?")
    assert (
        _found(lint(main_ppo("trainer.val_before_train=False", "+trainer.val_before_trian=False"), version), "VL230")
        == []
    )


@pytest.mark.parametrize(
    "version", across_releases(fails_on_oldest="verl 0.5.0 does not read algorithm.gdpo_reward_keys (issue #19)")
)
def test_a_real_added_key_is_silent(lint, version):
    # Not in the YAML, read by the trainer with `config.trainer.get("remove_previous_ckpt_in_save")`
    # and `config.algorithm.get("gdpo_reward_keys")` in both releases.
    r = lint(main_ppo("+trainer.remove_previous_ckpt_in_save=True", "++algorithm.gdpo_reward_keys=[acc]"), version)
    assert not r.errors, r.errors
    assert "VL230" not in codes(r)


def test_a_key_one_release_dropped(lint):
    """`trainer.use_legacy_worker_impl` is read by verl 0.7.1 and by nothing in 0.9.1."""
    script = main_ppo("++trainer.use_legacy_worker_impl=auto")
    assert "VL230" not in codes(lint(script, "0.7.1"))
    assert codes(lint(script, "0.9.1")) == ["VL230"]


@pytest.mark.parametrize(
    "version", across_releases(fails_on_oldest="verl 0.5.0 builds no dataclass configs: no VL110 (issue #19)")
)
def test_did_you_mean(lint, version):
    r = lint(
        main_ppo(
            "+actor_rollout_ref.actor.ppo_micro_batch_size_per_gpuu=4",
            "+critic.ppo_mini_batch_sise=8",
            "+data.max_prompt_lenght=8",
        ),
        version,
    )
    # Under nodes verl builds into a dataclass, the missing field is VL110 (an error), with the same guess.
    helps = [d.help for d in _found(r, "VL110")]
    assert helps == [
        "did you mean `actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu`?",
        "did you mean `critic.ppo_mini_batch_size`?",
    ]
    assert [d.help for d in _found(r, "VL230")] == ["did you mean `data.max_prompt_length`?"]


@pytest.mark.parametrize(
    "version", across_releases(fails_on_oldest="verl 0.5.0 builds no dataclass configs: no VL110 (issue #19)")
)
def test_did_you_mean_the_same_key_under_the_right_role(lint, version):
    """A setting placed under the wrong role: the guess is that key under the role that has it
    (before a similar field of the wrong one); a tie between roles falls back to the sibling."""
    r = lint(
        main_ppo(
            "+actor_rollout_ref.actor.gpu_memory_utilization=0.5",
            "+critic.kl_loss_coef=0.1",
            "+actor_rollout_ref.actor.log_prob_micro_batch_size_per_gpu=8",  # rollout's or ref's: no one guess
        ),
        version,
    )
    assert [d.help for d in _found(r, "VL110")] == [
        "did you mean `actor_rollout_ref.rollout.gpu_memory_utilization`?",
        "did you mean `actor_rollout_ref.actor.kl_loss_coef`?",
        "did you mean `actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu`?",
    ]


@pytest.mark.parametrize("version", across_releases())
def test_did_you_mean_for_an_unknown_key_names_its_role(lint, version):
    """Without `+`, Hydra refuses the key (VL101): the same guess. A common name (`name`) is no hint."""
    r = lint(
        main_ppo("actor_rollout_ref.actor.temperature=0.5", "trainer.train_batch_size=8", "critic.name=x"), version
    )
    helps = [d.help for d in _found(r, "VL101")]
    assert helps[:2] == [
        "did you mean `actor_rollout_ref.rollout.temperature`?",
        "did you mean `data.train_batch_size`?",
    ]
    assert (
        len(helps) == 3 and "custom_reward_function.name" not in helps[2]
    )  # the only other `*.name` of the same depth


@pytest.mark.parametrize("version", across_releases())
def test_a_section_added_under_the_wrong_node(lint, version):
    """`critic`, `optim` and `lr` are all read names, but verl reads `critic` from the root only:
    under `actor_rollout_ref` the setting is dead. The same section where verl reads it is not."""
    r = lint(main_ppo("+actor_rollout_ref.critic.optim.lr=1e-5", "+reward_model.algorithm.gamma=0.9"), version)
    first, second = _found(r, "VL230")
    assert first.key == "actor_rollout_ref.critic.optim.lr" and first.help == "did you mean `critic.optim.lr`?"
    assert (
        "reads `critic` from the top of the config (`critic.optim.lr`), never under `actor_rollout_ref`"
        in first.message
    )
    assert second.help == "did you mean `algorithm.gamma`?"
    assert "VL230" not in codes(
        lint(main_ppo("critic.optim.lr=1e-5", "+trainer.remove_previous_ckpt_in_save=True"), version)
    )


@pytest.mark.parametrize("version", across_releases())
def test_a_nested_section_under_the_wrong_node(lint, version):
    """`optim` and `fsdp_config` are read as `self.config.optim` / `self.config.model.fsdp_config`
    by the actor's and the critic's classes. Each such read is placed by what else the class
    reads from `self.config`, so a section added under a node no code reads it from is
    reported: where verl builds the node into a dataclass that lacks the field, as VL110 (the
    worker fails to start); on 0.5.0, which builds none, as VL230 (the value is ignored)."""
    r = lint(main_ppo("+actor_rollout_ref.rollout.optim.lr=2e-6", "+critic.fsdp_config.param_offload=True"), version)
    if version == OLDEST:
        rollout, critic = _found(r, "VL230")
        assert "reads `optim` under `actor_rollout_ref.actor` (`actor_rollout_ref.actor.optim.lr`)" in rollout.message
        assert critic.help == "did you mean `critic.model.fsdp_config.param_offload`?"
    else:
        rollout, critic = _found(r, "VL110")
        assert "adds `optim` to `actor_rollout_ref.rollout`, which verl builds into RolloutConfig" in rollout.message
        assert rollout.help == "did you mean `actor_rollout_ref.actor.optim.lr`?"
        assert "adds `fsdp_config` to `critic`, which verl builds into FSDPCriticConfig" in critic.message
    # Where the node's own code reads the section, nothing is said.
    r = lint(main_ppo("+actor_rollout_ref.actor.optim.new_knob=1", "+critic.checkpoint.new_knob=1"), version)
    assert not [d for d in r.diagnostics if "never under" in d.message or "adds `optim`" in d.message]
    assert not [d for d in r.diagnostics if "adds `checkpoint`" in d.message]


@pytest.mark.parametrize("version", across_releases())
def test_config_key_never_read_only_when_set(lint, version):
    r = lint(main_ppo("data.return_raw_input_ids=True"), version)
    [d] = _found(r, "VL231")
    assert d.severity.name.lower() == "info" and d.key == "data.return_raw_input_ids"
    assert d.help.startswith("remove the override")
    # The YAML ships the key: untouched, nothing is said about it.
    assert "VL231" not in codes(lint(main_ppo("trainer.nnodes=1"), version))


@pytest.mark.slow
@pytest.mark.parametrize("vendored", [False, True], ids=["verl-elsewhere", "verl-inside-project"])
def test_project_entry_point_outside_the_tree(tmp_path, verl_trees, vendored):
    """A project built on verl: its own entry point and the package it imports read keys too,
    whether verl is elsewhere or the project vendors it (`--verl-root .`)."""
    proj = tmp_path / "proj"
    if vendored:
        (proj / "verl" / "trainer").mkdir(parents=True)
        (proj / "verl" / "__init__.py").write_text("")
        (proj / "verl" / "trainer" / "__init__.py").write_text("def train(config):\n    return config.trainer.nnodes\n")
    (proj / "config").mkdir(parents=True, exist_ok=True)
    (proj / "mypkg").mkdir()
    (proj / "mypkg" / "__init__.py").write_text("")
    (proj / "mypkg" / "trainer.py").write_text("def fit(config):\n    return config.trainer.project_knob\n")
    (proj / "train.py").write_text(
        "import hydra\nfrom mypkg.trainer import fit\n\n"
        "@hydra.main(config_path='config', config_name='base', version_base=None)\n"
        "def main(config):\n    fit(config)\n"
    )
    (proj / "config" / "base.yaml").write_text("trainer:\n  nnodes: 1\n")
    s = proj / "run.sh"
    s.write_text("python3 train.py +trainer.project_knob=1 +trainer.nobody_reads_this=1\n")
    env = dict(os.environ, NO_COLOR="1", VERL_LINT_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "verl_lint.cli",
            "check",
            str(s),
            "--verl-root",
            str(proj if vendored else verl_trees[RELEASES[0]].root),
            "--select",
            "VL230",
            "--format",
            "json",
            "--fail-on",
            "warning",
        ],
        capture_output=True,
        text=True,
        cwd=proj,
        env=env,
    )
    assert r.returncode == 1, r.stderr
    assert [d["key"] for d in json_findings(r.stdout)] == ["trainer.nobody_reads_this"]


@pytest.mark.slow
def test_a_project_package_is_a_reader(tmp_path, verl_trees):
    """An entry point deep in a project (`myproj/recipe/x/main_ppo.py`, `recipe/` a namespace
    package) that imports its own workers by the project's top-level name: the whole `myproj/`
    reads keys. Its rollout's and monitor's keys are read (no VL230); a key it reads only under a
    switch this launch leaves off is VL233; a key nothing reads is still VL230. The project
    defines its own worker class: whether it builds verl's dataclass is unknown (no VL110)."""
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    for d in ("myproj/recipe/x/config", "myproj/workers", "myproj/utils"):
        (proj / d).mkdir(parents=True)
    for d in ("myproj", "myproj/workers", "myproj/utils"):
        (proj / d / "__init__.py").write_text("")
    (proj / "myproj/recipe/x/main_ppo.py").write_text(
        "import hydra\nfrom myproj.workers.rollout import MyRollout\n\n"
        "@hydra.main(config_path='config', config_name='x_trainer', version_base=None)\n"
        "def main(config):\n    MyRollout(config.actor_rollout_ref.rollout).run()\n"
    )
    (proj / "myproj/workers/rollout.py").write_text(
        "from verl.single_controller.base import Worker\nfrom myproj.utils.monitor import Monitor\n\n"
        "class MyRollout(Worker):\n"
        "    def __init__(self, config):\n"
        "        self.config = config\n"
        "        self.monitor = Monitor(config.get('monitor_interval', 10))\n"
        "        if self.config.multi_turn.enable:\n"
        "            self.tool_budget = self.config.tool_budget\n\n"
        "    def run(self):\n        return self.config.my_sampling_knob\n"
    )
    (proj / "myproj/utils/monitor.py").write_text(
        "class Monitor:\n    def __init__(self, interval):\n        self.interval = interval\n"
    )
    (proj / "myproj/recipe/x/config/x_trainer.yaml").write_text(
        "hydra:\n  searchpath:\n    - pkg://verl.trainer.config\ndefaults:\n  - ppo_trainer\n  - _self_\n"
    )
    s = proj / "run.sh"
    s.write_text(
        "python3 -m myproj.recipe.x.main_ppo +actor_rollout_ref.rollout.my_sampling_knob=3 "
        "+actor_rollout_ref.rollout.monitor_interval=5 +actor_rollout_ref.rollout.tool_budget=4 "
        "+actor_rollout_ref.rollout.nobody_reads_this=1\n"
    )
    env = dict(os.environ, NO_COLOR="1", VERL_LINT_CACHE_DIR=str(tmp_path / "cache"))

    def found(version):
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "verl_lint.cli",
                "check",
                str(s),
                "--verl-root",
                str(verl_trees[version].root),
                "--select",
                "VL110,VL230,VL233",
                "--format",
                "json",
                "--fail-on",
                "never",
            ],
            capture_output=True,
            text=True,
            cwd=proj,
            env=env,
        )
        assert r.returncode == 0, r.stderr
        return sorted((d["code"], d["key"]) for d in json_findings(r.stdout))

    unread = ("VL230", "actor_rollout_ref.rollout.nobody_reads_this")
    # The oldest release never assigns a `.enable` itself: the switch is judged from the config.
    assert found(RELEASES[-1]) == [unread, ("VL233", "actor_rollout_ref.rollout.tool_budget")]
    # The newest builds the rollout node into RolloutConfig, but the project runs its own worker.
    assert found(RELEASES[0]) == [unread]


def test_the_keys_an_added_key_did_not_make_are_found_in_one_pass():
    """VL230 sets the keys the launch added apart from the keys the config ships, passing an
    added key's section in one step (a config's keys come depth first). On random configs and
    added keys (some of them keys of the config, some not), the keys it keeps are those that are
    not an added key, not under one and not a node above one."""
    import random

    from omegaconf import OmegaConf

    from verl_lint.config.keys import all_keys
    from verl_lint.rules import unread

    class Launch:
        def __init__(self, keys):
            self._keys = keys

        def keys(self):
            return self._keys

    rng = random.Random(5)
    names = ["a", "b", "ab", "a_b", "c"]

    def tree(depth):
        if depth == 0 or rng.random() < 0.3:
            return rng.randint(0, 3)
        return {rng.choice(names): tree(depth - 1) for _ in range(rng.randint(1, 4))}

    for _ in range(500):
        keys = all_keys(OmegaConf.create({"r": tree(4), "a": tree(3), "b": tree(3)}))
        added = [
            rng.choice(keys) if rng.random() < 0.7 else ".".join(rng.choice(names) for _ in range(3))
            for _ in range(rng.randint(0, 4))
        ]
        made = [k for k in keys if any(k == a or k.startswith(a + ".") or a.startswith(k + ".") for a in added)]
        assert unread._shipped_keys(Launch(keys), added) == [k for k in keys if k not in made], added
