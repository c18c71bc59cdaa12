"""The knowledge tables are data with a schema: every shipped table passes it, states the releases
it was verified through, and each kind of violation is one error naming the file and line.

The broken tables here are the shipped tables with one real edit (the text checked exactly as
the loader checks an installed table); test_tables.py runs the CLI on such a table.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from packaging.version import Version

from verl_lint import knowledge
from verl_lint.data_tables import AllocatorTable, EnvRecord, KnobsTable
from verl_lint.knowledge import PRODUCTS, TableError, check_table
from verl_lint.table_records import IneffectiveRecord, RemovedRecord

RULES = Path(__file__).resolve().parent.parent / "rules"
SHIPPED = sorted(p.relative_to(RULES).as_posix() for p in RULES.rglob("*.yaml"))


def test_every_shipped_table_has_a_schema():
    assert SHIPPED == sorted(knowledge.TABLES)


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_table_passes_its_schema(name):
    """Fails on any violation (as TableError naming the line)."""
    check_table(name, (RULES / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", SHIPPED)
def test_every_table_states_the_releases_it_was_verified_through(name):
    text = (RULES / name).read_text(encoding="utf-8")
    verified = check_table(name, text).verified_through
    assert verified and set(verified) <= set(PRODUCTS), verified
    for release in verified.values():
        Version(release)
    raw = yaml.safe_load(text)
    if name.startswith("engine_args/") and "versions" in raw:  # generated: the newest release read
        assert verified == {raw["engine"]: raw["versions"][-1]}
    elif name == "engine_args/verl_assembly.yaml":  # generated from one verl release
        assert {f"verl {verified['verl']}"} == {a["derived_from"] for a in raw.values()}
    else:  # hand-written: its header
        assert raw[knowledge.HEADER] == verified
    if name == "env_vars.yaml":
        assert {"verl", "vllm", "vllm_ascend"} <= set(verified)


def test_load_table_gives_typed_records():
    """Every table but the engine snapshots loads as typed records (the header is not part of them)."""
    env = knowledge.load_table("env_vars.yaml")
    assert isinstance(env.vllm[0], EnvRecord) and env.vllm[0].name == "VLLM_USE_V1" and env.vllm[0].help
    assert "PATH" in env.worker_env_skip.names and "RAY_" in env.worker_env_skip.prefixes
    allocator = knowledge.load_table("allocator_options")
    assert isinstance(allocator, AllocatorTable) and all(isinstance(o.since, tuple) for o in allocator.npu)
    knobs = knowledge.load_table("engine_args/verl_knobs.yaml")
    assert isinstance(knobs, KnobsTable) and knobs.worker_mapping["vllm"]
    assembly = knowledge.load_table("engine_args/verl_assembly.yaml")
    assert set(assembly) == {"vllm", "sglang"} and assembly["vllm"].derived_from.startswith("verl ")
    assert all(e.line > 0 for e in assembly["vllm"].entries)
    assert {m.id for m in knowledge.load_table("models").models} >= {"Qwen/Qwen2.5-7B-Instruct"}
    ineffective, removed = knowledge.load_table("ineffective_keys.yaml"), knowledge.load_table("removed_keys.yaml")
    assert all(isinstance(r, IneffectiveRecord) for r in ineffective) and all(
        isinstance(r, RemovedRecord) for r in removed
    )
    vl205 = next(r for r in ineffective if r.code == "VL205")
    assert (
        vl205.keys == ("actor_rollout_ref.actor.optim.clip_grad", "critic.optim.clip_grad")
        and vl205.fallback == ">=0.6.0,<0.8.0"
    )
    assert dict(vl205.when)["trainer.use_legacy_worker_impl"] == "auto"
    assert (RULES / "ineffective_keys.yaml").read_text().splitlines()[vl205.line - 1] == "- code: VL205"
    with pytest.raises(AttributeError):
        vl205.code = "VL999"  # frozen


def _error(name: str, old: str, new: str, count: int = 1) -> tuple[str, str]:
    """The error of the shipped table `name` with `old` replaced by `new`, and the edited text."""
    text = (RULES / name).read_text(encoding="utf-8")
    assert old in text, f"{name} no longer contains {old!r}: update the test"
    text = text.replace(old, new, count)
    with pytest.raises(TableError) as ex:
        check_table(name, text)
    return str(ex.value), text


def _line(text: str, marker: str, nth: int = 1) -> int:
    """The line of the `nth` occurrence of `marker`."""
    return sum(part.count("\n") for part in text.split(marker)[:nth]) + 1


@pytest.mark.parametrize(
    "name,old,new,marker,nth,problem",
    [
        # unknown field
        (
            "ineffective_keys.yaml",
            "  keys: [actor_rollout_ref.actor.optim.clip_grad",
            "  kyes: [actor_rollout_ref.actor.optim.clip_grad",
            "kyes",
            1,
            'unknown field "kyes" in record VL205',
        ),
        (
            "allocator_options.yaml",
            '{key: pinned_max_cached_size_mb, since: "2.13"',
            '{key: pinned_max_cached_size_mb, sinc: "2.13"',
            "sinc:",
            1,
            'unknown field "sinc" in record pinned_max_cached_size_mb',
        ),
        (
            "engine_args/verl_knobs.yaml",
            "\nknob_values:",
            "\nknob_value:",
            "knob_value:",
            1,
            'unknown field "knob_value"',
        ),
        # wrong type
        (
            "removed_keys.yaml",
            "  rename: true\n",
            '  rename: "yes"\n',
            '"yes"',
            1,
            'field "rename" in record VL401: expected true or false, not "yes"',
        ),
        (
            "ineffective_keys.yaml",
            "  silent_values: [null, false]",
            "  silent_values: {off: null}",
            "{off: null}",
            1,
            'field "silent_values" in record VL203: expected a list, not a mapping',
        ),
        (
            "env_vars.yaml",
            '    value: "0|false"',
            "    value: 0",
            "value: 0",
            1,
            'field "value" in record VLLM_USE_V1: expected text, not 0',
        ),
        (
            "env_vars.yaml",
            '    value: "0|false"',
            '    value: "(0|false"',
            "(0|false",
            1,
            'field "value" in record VLLM_USE_V1: "(0|false" is not a regular expression',
        ),
        (
            "engine_args/verl_knobs.yaml",
            "  expert_parallel_size: self.config.tensor_model_parallel_size * self.config.data_parallel_size",
            "  expert_parallel_size: [tp, dp]",
            "[tp, dp]",
            1,
            'field "knob_values.expert_parallel_size": expected text, not a list',
        ),
        (
            "engine_args/verl_assembly.yaml",
            "    phase: pre\n",
            "    phase: before\n",
            "phase: before",
            1,
            'field "vllm.entries.phase": expected one of pre, default, after, not "before"',
        ),
        # missing field
        (
            "models.yaml",
            "    params: 7.61\n",
            "",
            "- id: Qwen/Qwen2.5-7B-Instruct",
            1,
            'missing field "params" in record Qwen/Qwen2.5-7B-Instruct',
        ),
        (
            "removed_keys.yaml",
            '  removed: "0.6.0"\n',
            "",
            "- code: VL401",
            1,
            'missing field "removed" in record VL401',
        ),
        (
            "ineffective_keys.yaml",
            'verified_through: {verl: "0.9.1"}\n',
            "",
            "records:",
            1,
            'missing field "verified_through"',
        ),
        # a range / release that is not PEP 440, a range that is empty
        (
            "ineffective_keys.yaml",
            '  verl: ">=0.6.0,<0.8.0"',
            '  verl: ">=0.6.0,<<0.8.0"',
            "<<0.8.0",
            1,
            'field "verl" in record VL205: ">=0.6.0,<<0.8.0" is not a PEP 440 version range such as ">=0.7.0,<0.8.0"',
        ),
        (
            "removed_keys.yaml",
            '  removed: "0.6.0"',
            '  removed: "0.6.x"',
            "0.6.x",
            1,
            'field "removed" in record VL401: "0.6.x" is not a PEP 440 release such as "0.9.1"',
        ),
        (
            "removed_keys.yaml",
            '  removed: "0.6.0"',
            "  removed: 0.6",
            "removed: 0.6",
            1,
            'field "removed" in record VL401: 0.6 is not a PEP 440 release',
        ),
        (
            "env_vars.yaml",
            '    since: "0.12.0"\n    until: "0.15.0"',
            '    since: "0.12.0"\n    until: "0.11.0"',
            'until: "0.11.0"',
            1,
            "until 0.11.0 is not after since 0.12.0 in record VLLM_ATTENTION_BACKEND",
        ),
        (
            "engine_args/vllm_ascend.yaml",
            "  DYNAMIC_EPLB: [0.12.0rc1]",
            "  DYNAMIC_EPLB: [0.12.0rc2]",
            "DYNAMIC_EPLB",
            1,
            "toggles of env.DYNAMIC_EPLB must be increasing entries of `versions`",
        ),
        (
            "engine_args/vllm_ascend.yaml",
            "versions: [0.9.1, 0.10.2rc1,",
            "versions: [0.10.2rc1, 0.9.1,",
            "versions:",
            1,
            "versions must be distinct and increasing",
        ),
        (
            "ineffective_keys.yaml",
            'verified_through: {verl: "0.9.1"}',
            'verified_through: {verl: "0.9.1", vlm: "0.34.0"}',
            "verified_through",
            1,
            'field "verified_through": expected one of verl, vllm',
        ),
        (
            "env_vars.yaml",
            'vllm: "0.34.0", ',
            "",
            "verified_through",
            1,
            'field "verified_through": no release of vllm',
        ),
        # duplicate rule code, duplicate key
        (
            "removed_keys.yaml",
            "- code: VL402\n",
            "- code: VL401\n",
            "code: VL401",
            2,
            "duplicate code (first at line {first}) in record VL401",
        ),
        (
            "allocator_options.yaml",
            "{key: pinned_max_cached_size_mb,",
            "{key: pinned_max_round_threshold_mb,",
            "key: pinned_max_round_threshold_mb",
            2,
            "duplicate key (first at line {first}) in record pinned_max_round_threshold_mb",
        ),
        (
            "engine_args/vllm.yaml",
            "  api_key: [0.8.5.post1]\n",
            "  api_key: [0.8.5.post1]\n  api_key: [0.9.2]\n",
            "api_key:",
            2,
            'field "args": duplicate key "api_key" (first at line {first})',
        ),
        (
            "ineffective_keys.yaml",
            "  severity: error\n",
            "  severity: error\n  severity: warning\n",
            "severity:",
            2,
            'duplicate key "severity" (first at line {first}) in record VL203',
        ),
        # a malformed fact (requires:)
        (
            "ineffective_keys.yaml",
            "    - {not_read: grad_clip}",
            "    - {file: verl/x.py, reads: grad_clip}",
            "verl/x.py",
            1,
            "field \"requires\" in record VL204: fact 'reads' takes no `file:`",
        ),
        (
            "ineffective_keys.yaml",
            "    - {field: verl.workers.config.actor.FSDPActorConfig.grad_clip}",
            "    - {field: FSDPActorConfig.grad_clip}",
            "{field: FSDPActorConfig",
            1,
            'field "requires" in record VL204: `field:` is module.Class.field, not "FSDPActorConfig.grad_clip"',
        ),
        (
            "ineffective_keys.yaml",
            "    - {file: verl/trainer/config/ppo_trainer.yaml, contains: legacy_reward_impl}",
            "    - {contains: legacy_reward_impl}",
            "{contains:",
            1,
            "field \"requires\" in record VL203: fact 'contains' needs `file:`",
        ),
        (
            "ineffective_keys.yaml",
            "    - {file: verl/trainer/config/ppo_trainer.yaml, contains: legacy_reward_impl}",
            '    - {file: verl/x.py, exists: "yes"}',
            "verl/x.py",
            1,
            'field "requires" in record VL203: `exists:` is true or false, not "yes"',
        ),
        (
            "ineffective_keys.yaml",
            "    - {not_read: grad_clip}",
            "    - {any: []}",
            "{any: []}",
            1,
            'field "requires" in record VL204: `any:` needs a list of facts',
        ),
        # not YAML at all
        ("env_vars.yaml", "  names: [PATH,", "  names: [PATH,,", "names:", 1, "not valid YAML"),
    ],
)
def test_each_violation_is_one_error_naming_file_and_line(name, old, new, marker, nth, problem):
    """The line is that of the `nth` occurrence of `marker` ({first}: of the first one)."""
    msg, text = _error(name, old, new)
    assert msg.startswith(f"rules/{name}:{_line(text, marker, nth)}: {problem.format(first=_line(text, marker))}"), msg
    assert "\n" not in msg


def test_a_rule_code_already_registered_names_the_record():
    """Codes are unique across the rule pack, not only within a table: registering the table
    rules again (every code now taken) stops at the first record's line, before registering any."""
    from verl_lint.registry import REGISTRY
    from verl_lint.rules import tables

    first = knowledge.load_table("ineffective_keys.yaml")[0]
    before = REGISTRY.get(first.code)
    with pytest.raises(
        TableError,
        match=rf"^rules/ineffective_keys.yaml:{first.line}: rule code {first.code} is already taken by rule {before.name}$",
    ):
        tables._register()
    assert REGISTRY.get(first.code) is before
