"""Issue #17: a launch that reads a variable the branches of an if/case set differently is
analysed once per combination of values, through the real pipeline (verl 0.9.1, Hydra)."""

from __future__ import annotations

from verl_lint.shell import evaluate

LAUNCH = (
    "python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm trainer.nnodes=1 trainer.n_gpus_per_node=8 \\\n"
    "  actor_rollout_ref.rollout.tensor_model_parallel_size=$TP trainer.totally_wrong=1\n"
)


def found(report) -> list[tuple[str, int, int, str]]:
    return [(d.code, d.span.line, d.span.col, d.message) for d in report.diagnostics]


def test_each_branch_value_is_checked_and_a_finding_says_under_which_branch(lint):
    report = lint('#!/bin/bash\nif [ "$MODE" = big ]; then TP=4; else TP=3; fi\n' + LAUNCH)
    (vl101, _, _, unchanged), (vl306, line, col, message) = sorted(found(report))
    assert vl101 == "VL101" and vl306 == "VL306"
    assert (line, col) == (4, 3)
    assert message.endswith(' (when line 2: not `[ "$MODE" = big ]`)') and "3×1×1 = 3" in message
    assert "when line" not in unchanged  # in both variants: once, unchanged
    assert report.launches == 1


def test_valid_in_every_branch_is_checked_not_skipped(lint):
    """Before: TP was unknown after the if and VL300 said the size rules were not checked."""
    text = '#!/bin/bash\ncase "$SIZE" in\n  big) TP=4;;\n  *) TP=2;;\nesac\n' + LAUNCH
    assert [c for c, *_ in found(lint(text))] == ["VL101"]


def test_beyond_the_cap_the_values_stay_unknown(lint):
    ifs = "".join(f'if [ "$M" = {i} ]; then V{i}=2; else V{i}=1; fi\n' for i in range(3))  # 8 combinations, TP makes 16
    report = lint(
        "#!/bin/bash\n"
        + ifs
        + 'if [ "$MODE" = big ]; then TP=4; else TP=3; fi\n'
        + LAUNCH.replace("trainer.nnodes=1", "trainer.nnodes=1 +a=$V0 +b=$V1 +c=$V2")
    )
    codes = sorted(c for c, *_ in found(report))
    assert codes == ["VL101", "VL300"], found(report)


def test_a_variant_that_cannot_be_analysed_says_which(lint):
    """Before: $PY was unknown and the launch was not found at all."""
    text = (
        "#!/bin/bash\nif [ -f /opt/sim/launch ]; then PY=/opt/sim/launch; else PY=python3; fi\n$PY"
        + LAUNCH[len("python3") :]
    )
    report = lint(text)
    [vl101] = [m for c, _, _, m in found(report) if c == "VL101"]  # only the variant that is analysed
    assert vl101.endswith(" (when line 2: not `[ -f /opt/sim/launch ]`)")
    [(_, line, col, message)] = [f for f in found(report) if f[0] == "VL007"]
    assert message.endswith(" (when line 2: `[ -f /opt/sim/launch ]`)") and (line, col) == (3, 8)
    assert report.launches == 1


def test_a_finding_names_only_the_branches_it_depends_on(lint):
    """Two variables with variants: the VL306 holds for TP=3 whatever the other one is, so its
    message names the TP branch only."""
    text = (
        '#!/bin/bash\nif [ "$GPU" = h100 ]; then export MUJOCO_GL=osmesa; fi\n'
        'if [ "$MODE" = big ]; then TP=4; else TP=3; fi\n' + LAUNCH
    )
    report = lint(text)
    [message] = [m for c, _, _, m in found(report) if c == "VL306"]
    assert message.endswith(' (when line 3: not `[ "$MODE" = big ]`)'), message


def test_variables_one_if_sets_vary_together(lint):
    """TP and the experiment name take three values each from one if/elif/else: three variants,
    not nine (beyond the cap, and six of them a run that cannot happen)."""
    branches = (
        '#!/bin/bash\nif [ "$M" = a ]; then TP=4; NAME=a; elif [ "$M" = b ]; then TP=2; NAME=b; else TP=3; NAME=c; fi\n'
    )
    report = lint(branches + LAUNCH.replace("trainer.nnodes=1", "trainer.nnodes=1 trainer.experiment_name=$NAME"))
    [message] = [m for c, _, _, m in found(report) if c == "VL306"]
    assert message.endswith(" (when line 2: else)") and "3×1×1 = 3" in message
    assert "VL300" not in [c for c, *_ in found(report)]


def test_a_loop_over_known_words_checks_each_iteration_in_order(lint):
    """`for TP in 4 3`: the launch inside runs once per word, with what earlier iterations left
    (bash's order); a finding of one iteration says which. A loop over words only known at run
    time (or a glob) keeps its variable unknown, as before."""
    text = (
        "#!/bin/bash\nX=1\nfor TP in 4 3; do\n"
        + LAUNCH.replace("trainer.totally_wrong=1", "+x=$X").replace("python3", "  python3")
        + "  X=2\ndone\n"
        "for TP in *.conf; do\n" + LAUNCH.replace("trainer.totally_wrong=1", "") + "done\n"
    )
    report = lint(text)
    assert [(c, line, m.endswith(" (in the iteration of line 3 where `TP=3`)")) for c, line, _, m in found(report)] == [
        ("VL306", 5, True),
        ("VL300", 10, False),
    ], found(report)
    assert report.launches == 2
    xs = [c.words[-1].text for c in evaluate("/tmp/loop.sh", text).commands if c.span.line == 4]
    assert xs == ["+x=1", "+x=2"]
