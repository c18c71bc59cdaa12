"""Work that depends only on the verl tree or the entry point is done once per run, not once per
launch (issue #36, item 4), counted in work rather than timed: whole files parsed, rule runs.
What this saves is measured by bench/run.py."""

from __future__ import annotations

import sys

from conftest import NEWEST

from verl_lint.registry import REGISTRY

LAUNCH = (
    "python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo actor_rollout_ref.rollout.name=vllm "
    "actor_rollout_ref.actor.use_kl_loss={kl} data.train_batch_size={bsz} actor_rollout_ref.actor.ppo_mini_batch_size=32 "
    "actor_rollout_ref.rollout.tensor_model_parallel_size=$TP trainer.n_gpus_per_node=8 trainer.experiment_name=run{i}\n"
)

_PARSED: list = []  # while a list: the file-sized sources compiled (ast.parse, compile); audit hooks cannot be removed
_HOOKED: list = []


def _count(event: str, args: tuple) -> None:
    if event == "compile" and _PARSED and isinstance(args[0], (str, bytes)) and len(args[0]) > 2000:
        _PARSED[-1].append(args[1])


def whole_files_parsed(run) -> list:
    """The file-sized sources parsed while `run()` runs (an expression of a condition is not one)."""
    if not _HOOKED:
        sys.addaudithook(_count)
        _HOOKED.append(True)
    _PARSED.append([])
    try:
        run()
        return _PARSED[-1]
    finally:
        _PARSED.clear()


def script(n: int, start: int = 0) -> str:
    return "#!/bin/bash\n" + "".join(
        LAUNCH.format(kl=("True", "False")[i % 2], bsz=64 * (i % 3 + 1), i=i) for i in range(start, start + n)
    )


def test_no_source_is_parsed_again_for_each_launch(lint):
    """Once the entry point and the tree have been read for one launch, 12 more launches of it
    (other values, both sides of the conditions the rules decide) parse no file again: the
    reference-policy wiring, the config classes, the guards of the keys are read once."""
    first = lint(script(1), NEWEST, "first.sh")
    assert first.launches == 1
    reports = []
    parsed = whole_files_parsed(lambda: reports.append(lint(script(12, start=1), NEWEST, "many.sh")))
    assert reports[0].launches == 12 and "VL300" in {d.code for d in reports[0].diagnostics}  # $TP: checks skipped
    assert parsed == []


def test_each_rule_runs_once_per_launch(lint, monkeypatch):
    """VL300 (size checks that could not decide) reads what the size rules found in the same run
    of them that is reported, instead of running every size rule a second time."""
    calls: dict[str, int] = {}
    for r in REGISTRY:
        if r.check is not None:

            def counted(ctx, *settings, _check=r.check, _code=r.code):  # (a rule with a subject gets its settings)
                calls[_code] = calls.get(_code, 0) + 1
                return _check(ctx, *settings)

            monkeypatch.setattr(r, "check", counted)
    report = lint(script(3), NEWEST, "three.sh")
    assert report.launches == 3 and "VL300" in {d.code for d in report.diagnostics}
    size_rules = [c for c in calls if c.startswith("VL3") and c != "VL300"]
    assert size_rules and all(calls[c] <= 3 for c in calls), calls


def test_a_batch_leaves_the_collector_as_it_found_it(tmp_path, verl_trees):
    """`check` lints its files with the collector set for a batch (runner._batch_collector); a
    caller of lint_paths in its own process (the tests, a tool) gets its settings back."""
    import gc

    from verl_lint.runner import lint_paths
    from verl_lint.runs import Options

    (tmp_path / "run.sh").write_text(script(2))
    before = gc.get_threshold()
    [report] = lint_paths([tmp_path / "run.sh"], Options(verl_tree=verl_trees[NEWEST]), use_cache=False, jobs=1)
    assert report.launches == 2
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_each_launchs_config_is_freed_when_the_launch_ends_and_never_walked_while_it_runs(tmp_path, verl_trees):
    """A launch runs with the collector paused and its young objects are collected when it ends
    (pipeline._collected_after): its composed config, cycles and all, is gone after the run
    without a collection of the caller's, and no collection walked it while it was alive (the
    only collections during the run are the one per launch, of the youngest generation)."""
    import gc

    from omegaconf import DictConfig

    from verl_lint.runner import lint_paths
    from verl_lint.runs import Options

    (tmp_path / "run.sh").write_text(script(3))
    options = Options(verl_tree=verl_trees[NEWEST])
    lint_paths([tmp_path / "run.sh"], options, use_cache=False, jobs=1)  # the first run builds what is kept
    gc.collect()
    configs = sum(isinstance(o, DictConfig) for o in gc.get_objects())
    seen = []

    def count(phase, info):
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(count)
    try:
        [report] = lint_paths([tmp_path / "run.sh"], options, use_cache=False, jobs=1)
    finally:
        gc.callbacks.remove(count)
    assert report.launches == 3 and gc.isenabled()
    assert sum(isinstance(o, DictConfig) for o in gc.get_objects()) == configs
    assert seen.count(0) >= 3 and set(seen) <= {0}, seen
