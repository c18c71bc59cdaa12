"""Fixes and the upgrade preview on real releases (0.7.1 -> 0.9.1)."""

from __future__ import annotations

import pytest
from conftest import NEWEST, OLDER
from test_cli import cli

OLD_STYLE = """#!/bin/bash
# written for verl 0.7
RAY=(ray_init.num_cpus=32)
OPT="ray_init.timeline_json_file=/tmp/tl.json"
python3 -m verl.trainer.main_ppo \\
    "${RAY[@]}" $OPT \\
    trainer.use_legacy_worker_impl=auto \\
    trainer.nnodes=1 \\
    trainer.nnodes=2 \\
    actor_rollout_ref.rollout.name=vllm
"""


def roots(verl_trees):
    return str(verl_trees[OLDER].root), str(verl_trees[NEWEST].root)


@pytest.mark.slow
def test_safe_fixes_in_arrays_variables_and_inline(tmp_path, verl_trees):
    old, new = roots(verl_trees)
    s = tmp_path / "run.sh"
    s.write_text(OLD_STYLE)
    s.chmod(0o755)
    diff = cli("check", "--verl-root", new, "--diff", str(s))
    assert "-RAY=(ray_init.num_cpus=32)" in diff.stdout and "+RAY=(ray_kwargs.ray_init.num_cpus=32)" in diff.stdout
    assert '+OPT="ray_kwargs.timeline_json_file=/tmp/tl.json"' in diff.stdout
    assert "-    trainer.nnodes=1 \\" in diff.stdout
    assert s.read_text() == OLD_STYLE  # --diff writes nothing
    cli("check", "--verl-root", new, "--fix", str(s))
    text = s.read_text()
    assert "ray_kwargs.ray_init.num_cpus=32" in text and "trainer.nnodes=1" not in text
    assert "trainer.use_legacy_worker_impl=auto" in text  # a removal is not a safe fix
    assert s.stat().st_mode & 0o777 == 0o755
    again = cli("check", "--verl-root", new, "--fix", str(s))
    assert s.read_text() == text  # idempotent: nothing fixable is left
    assert "Fixed" not in again.stderr
    cli("check", "--verl-root", new, "--fix", "--unsafe-fixes", str(s))
    assert "use_legacy_worker_impl" not in s.read_text()
    final = cli("check", "--verl-root", new, str(s))
    assert final.returncode == 0, final.stdout


@pytest.mark.slow
def test_upgrade_preview_reports_only_changes(tmp_path, verl_trees):
    s = tmp_path / "run.sh"
    s.write_text(
        OLD_STYLE
        + "python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer actor_rollout_ref.rollout.mode=sync\n"
    )
    r = cli("upgrade", str(s), "--from", OLDER, "--to", NEWEST)
    assert r.returncode == 1
    out = r.stdout
    assert "trainer.use_legacy_worker_impl" in out  # stops existing in 0.8
    assert "ppo_megatron_trainer" in out  # deprecated config name
    assert "ray_init.num_cpus" not in out  # already broken on 0.7.1: not a change
    assert "VL107" not in out  # the duplicate is the same on both
    fixed = cli("upgrade", str(s), "--from", OLDER, "--to", NEWEST, "--fix", "--unsafe-fixes")
    check = cli("check", "--verl", NEWEST, "--select", "VL1,VL4", "--fail-on", "error", str(s))
    assert check.returncode in (0, 1)
    assert "VL101" not in check.stdout and "VL407" not in check.stdout, check.stdout + fixed.stderr


@pytest.mark.slow
def test_fix_skips_a_file_changed_since_read(tmp_path, verl_trees):
    from verl_lint.config.compose import Composer
    from verl_lint.report.fix import apply_fixes
    from verl_lint.runner import lint_file
    from verl_lint.runs import Options

    s = tmp_path / "run.sh"
    s.write_text(OLD_STYLE)
    report = lint_file(s, Options(verl_tree=verl_trees[NEWEST]), Composer(cache=False))
    s.write_text(OLD_STYLE + "# edited meanwhile\n")
    res = apply_fixes(str(s), report.text, report.diagnostics, unsafe=False, write=True)
    assert res.applied == 0 and "changed since" in res.skipped_reason
    assert s.read_text().endswith("# edited meanwhile\n")


@pytest.mark.slow
def test_a_value_repeated_word_for_word_is_redundant_even_when_only_known_at_run_time(lint):
    """`k=$(pwd)/x/$RUN` twice in one command: the same words give the same value, so nothing is
    lost (info, removable); a different tail is a real override (warning)."""
    script = (
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm "
        "trainer.rollout_data_dir=$(nproc)/x/$RUN trainer.rollout_data_dir=$(nproc)/x/$RUN "
        "trainer.validation_data_dir=$(nproc)/y trainer.validation_data_dir=$(nproc)/z\n"
    )
    found = [(d.key, str(d.severity)) for d in lint(script).diagnostics if d.code == "VL107"]
    assert found == [("trainer.rollout_data_dir", "info"), ("trainer.validation_data_dir", "warning")]


@pytest.mark.slow
@pytest.mark.parametrize("release", [NEWEST, OLDER])
def test_a_rename_drops_the_plus_where_the_new_key_exists(tmp_path, verl_trees, release):
    """`+old=v` renamed to `+new=v` fails where the config ships `new` (Hydra refuses to add a key that is there)."""
    s = tmp_path / "run.sh"
    s.write_text(
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm +critic.optim.warmup_style=cosine\n"
    )
    cli("check", "--verl-root", str(verl_trees[release].root), "--fix", str(s))
    assert s.read_text().endswith(" critic.optim.lr_scheduler_type=cosine\n")
    final = cli("check", "--verl-root", str(verl_trees[release].root), str(s))
    assert final.returncode == 0, final.stdout
