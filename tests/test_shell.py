"""The bash front end on real tree-sitter-bash: constant propagation, unknowns, spans."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

from verl_lint.launch.recognise import _parsed_again, launches
from verl_lint.rules.script import broken_continuations
from verl_lint.shell import evaluate
from verl_lint.shell.source import parser


def one_launch(text: str, tmp_path: Path, name: str = "s.sh"):
    p = tmp_path / name
    p.write_text(text)
    result = evaluate(str(p), text)
    found = launches(result.commands, str(p))
    assert len(found) == 1, found
    return found[0], result


def words(launch):
    return [w.text for w in launch.overrides]


def test_assignments_defaults_arithmetic(tmp_path):
    text = (
        "A=${NNODES:-4}\nB=${UNSET-7}\n: ${C:=3}\nD=$(( (A + B) * C / 2 % 5 ))\nE=$((-A ** 2))\n"
        "python3 -m verl.trainer.main_ppo a=$A b=$B c=$C d=$D e=$E f=${#A}\n"
    )
    la, _ = one_launch(text, tmp_path)
    assert words(la) == ["a=4", "b=7", "c=3", "d=1", "e=-16", "f=1"]


def test_export_local_readonly_prefix_env(tmp_path):
    text = "export X=1\nreadonly R=2\nY=3\nf() { local L=5; FOO=bar python3 -m m l=$L r=$R; }\nf\n"
    la, _ = one_launch(text, tmp_path)
    assert words(la) == ["l=5", "r=2"]
    assert la.env["X"].value == "1" and la.env["FOO"].value == "bar"
    assert "Y" not in la.env  # not exported
    assert la.env["X"].span.line == 1 and la.env["FOO"].span.line == 4


def test_arrays_and_spans(tmp_path):
    text = 'ARR=(a=1 "b=two words")\nARR+=(c=3)\npython3 -m m "${ARR[@]}" x=${ARR[0]} \\\n  y=2\n'
    la, _ = one_launch(text, tmp_path)
    assert words(la) == ["a=1", "b=two words", "c=3", "x=a=1", "y=2"]
    a, b, c, x, y = la.overrides
    assert (a.span.line, a.span.col, a.span.end_col) == (1, 6, 9)  # the array element
    assert (b.span.line, b.span.col) == (1, 10)
    assert (c.span.line, c.span.col) == (2, 7)
    assert (y.span.line, y.span.col, y.span.end_col) == (4, 3, 6)  # after the line continuation


def test_star_and_unquoted_split(tmp_path):
    text = 'ARGS="p=1 q=2"\nA=(u v)\npython3 -m m $ARGS "${A[*]}"\n'
    la, _ = one_launch(text, tmp_path)
    assert words(la) == ["p=1", "q=2", "u v"]


def test_quotes_and_concatenation(tmp_path):
    text = "V=x\npython3 -m m 'k1=$V' \"k2=$V\"y k3=\"a\"'b'$V 'trainer.logger=[\"console\"]'\n"
    la, _ = one_launch(text, tmp_path)
    assert words(la) == ["k1=$V", "k2=xy", "k3=abx", 'trainer.logger=["console"]']


def test_unknowns_carry_reasons(tmp_path):
    text = (
        "D=$(date +%s)\nread R\nfor i in $(seq 2); do L=$i; done\n"
        'python3 -m m a=$D b=$R c=$L d=$NOT_SET e=`hostname` "$@"\n'
    )
    la, _ = one_launch(text, tmp_path)
    a, b, c, d, e = la.overrides
    assert a.text is None and "date" in a.unknown.reason and a.prefix == "a="
    assert b.text is None and "read" in b.unknown.reason
    assert c.text is None and "loop" in c.unknown.reason
    assert d.text is None and "environment" in d.unknown.reason
    assert e.text is None and "hostname" in e.unknown.reason
    assert la.caller_args is not None and la.caller_args.line == 4  # "$@" is reported, not invented


def test_used_before_assignment_is_a_finding(tmp_path):
    text = "x=$(( 4096 / sp_size ))\nsp_size=4\npython3 -m m x=$x\n"
    la, result = one_launch(text, tmp_path)
    [d] = result.diagnostics
    assert d.code == "VL002" and (d.span.line, d.span.col) == (1, 14)
    assert la.overrides[0].text is None


def test_branches_become_variants_of_the_launch_or_agree(tmp_path):
    """Issue #17: a value the branches disagree on is a set of values, each under its branch;
    the launch that reads it is expanded once per value. A value they agree on is known."""
    p = tmp_path / "s.sh"
    text = 'if [ "$X" = 1 ]; then A=1; B=2; else A=3; B=2; fi\npython3 -m m a=$A b=$B\necho $A\n'
    found = launches(evaluate(str(p), text).commands, str(p))
    assert [(words(la), la.variant) for la in found] == [
        (["a=1", "b=2"], ('when line 1: `[ "$X" = 1 ]`',)),
        (["a=3", "b=2"], ('when line 1: not `[ "$X" = 1 ]`',)),
    ]
    assert found[0].span == found[1].span


def test_variants_of_a_case_an_elif_and_the_cap(tmp_path):
    p = tmp_path / "s.sh"
    text = (
        'case "$SIZE" in\n  small) TP=1;;\n  big|huge) TP=4;;\n  *) TP=2;;\nesac\n'  # `*)`: no fall-through value
        'if [ "$A" = x ]; then N=1; fi\n'  # no else: N unset there
        "python3 -m m tp=$TP n=$N\n"
    )
    found = launches(evaluate(str(p), text).commands, str(p))
    assert [(words(la)[0], la.overrides[1].text) for la in found] == [
        (f"tp={tp}", n) for n in ("n=1", None) for tp in (1, 4, 2)
    ]
    assert found[0].variant == ('when line 6: `[ "$A" = x ]`', 'when line 2: `"$SIZE"` matches `small`')
    assert found[4].variant == ('when line 6: not `[ "$A" = x ]`', 'when line 3: `"$SIZE"` matches `big|huge`')
    many = "".join(f'if [ "$M" = {i} ]; then V{i}=a; else V{i}=b; fi\n' for i in range(4))  # 16 combinations
    [la] = launches(
        evaluate(str(p), many + "python3 -m m " + " ".join(f"v{i}=$V{i}" for i in range(4)) + "\n").commands, str(p)
    )
    assert la.variant is None and la.overrides[0].text is None and "branch" in la.overrides[0].unknown.reason


def test_launch_forms(tmp_path):
    cases = {
        "python -u -X importtime -m verl.trainer.main_ppo a=1\n": ("verl.trainer.main_ppo", None),
        "torchrun --nproc_per_node=8 --nnodes 2 -m verl.trainer.sft_trainer a=1\n": ("verl.trainer.sft_trainer", None),
        "ray job submit --address=http://x:8265 -- python3 -m verl.trainer.main_ppo a=1\n": (
            "verl.trainer.main_ppo",
            None,
        ),
        "PY=python3\n$PY -m verl.trainer.main_ppo a=1 | tee log\n": ("verl.trainer.main_ppo", None),
        "nohup python3 recipe/x/main.py a=1 &\n": (None, "recipe/x/main.py"),
        "if true; then env A=1 python3 -m mod a=1; fi\n": ("mod", None),
        "PY=/isaac-sim/python.sh\n$PY -m verl.experimental.vla.main_ppo a=1\n": (
            "verl.experimental.vla.main_ppo",
            None,
        ),
        # launchers that run the script themselves, with flags verl-lint does not all know
        "deepspeed --num_gpus 8 --bind_cores_to_rank -m verl.trainer.main_ppo a=1\n": ("verl.trainer.main_ppo", None),
        "srun -N1 accelerate launch --num_processes 8 --mixed_precision bf16 recipe/x/main_dapo.py a=1\n": (
            None,
            "recipe/x/main_dapo.py",
        ),
        "export CUDA_VISIBLE_DEVICES=0\nenv -u CUDA_VISIBLE_DEVICES B=1 python3 -m mod a=1\n": ("mod", None),
    }
    for i, (text, (module, file)) in enumerate(cases.items()):
        la, _ = one_launch(text, tmp_path, f"c{i}.sh")
        assert (la.module, la.file) == (module, file), text
        assert words(la) == ["a=1"], text
        assert "CUDA_VISIBLE_DEVICES" not in la.env  # `env -u` takes it out


def test_hydra_flags_are_not_overrides(tmp_path):
    text = "python3 -m m --config-path=cfg -cn ppo_megatron_trainer --config-dir /x a=1 --multirun\n"
    la, _ = one_launch(text, tmp_path)
    assert la.config_path.text == "cfg" and la.config_name.text == "ppo_megatron_trainer"
    assert la.config_dir.text == "/x" and words(la) == ["a=1"]


def test_source_inside_tree_only(tmp_path):
    (tmp_path / "common.sh").write_text("TP=4\n")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.sh"
    outside.write_text("DP=9\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    text = f"source ../common.sh\n. {outside}\npython3 -m m tp=$TP dp=$DP\n"
    p = sub / "s.sh"
    p.write_text(text)
    result = evaluate(str(p), text, [tmp_path])
    [la] = launches(result.commands, str(p))
    assert la.overrides[0].text == "tp=4"
    assert la.overrides[1].text is None  # outside the allowed root: never read


def test_nothing_is_executed(tmp_path):
    marker = tmp_path / "MARKER"
    text = (
        f"X=$(touch {marker})\nY=`touch {marker}`\neval 'touch {marker}'\ntouch {marker}\n"
        f"cat <(touch {marker})\ntrap 'touch {marker}' EXIT\n"
        f'python3 -m verl.trainer.main_ppo a=$(touch {marker}) <<< "$(touch {marker})"\n'
    )
    evaluate(str(tmp_path / "s.sh"), text)
    assert not marker.exists()


def test_parse_error_is_located_and_rest_analysed(tmp_path):
    text = "A=1\nif then fi )\npython3 -m m a=$A\n"
    p = tmp_path / "s.sh"
    result = evaluate(str(p), text)
    assert any(d.code == "VL001" and d.span.line == 2 for d in result.diagnostics)
    assert any(c.words and c.words[0].text == "python3" for c in result.commands)


def test_word_split_by_the_grammar_is_joined(tmp_path):
    # tree-sitter-bash ends `a=$H/x-$` and starts a new node at `D/y`; bash sees one word.
    la, _ = one_launch("D=d\nH=/h\npython3 -m m a=$H/x-$D/y.parquet b=1\n", tmp_path)
    assert words(la) == ["a=/h/x-d/y.parquet", "b=1"]
    assert (la.overrides[0].span.col, la.overrides[0].span.end_col) == (14, 33)


def cuts(text: str, tmp_path: Path):
    """(the VL008 findings of a script, its launches)."""
    p = tmp_path / "s.sh"
    p.write_text(text)
    result = evaluate(str(p), text)
    found = launches(result.commands, str(p))
    return broken_continuations(result.commands, found), found


def test_broken_continuation_is_a_finding(tmp_path):
    text = "python3 -m m \\\n  a=1 \\\n# note\n  trainer.nnodes=2 \\\n  b=3 \\\n\n  data.x.y=4\n"
    [d, again], [la] = cuts(text, tmp_path)
    assert d.code == "VL008" and (d.span.line, d.span.col) == (4, 3) and d.key == "trainer.nnodes"
    assert "the launch above ended early" in d.message
    assert (again.span.line, again.key) == (7, "data.x.y")  # a second cut: below the first one's overrides
    assert (la.cut.line, la.cut.blank) == (4, None) and {k: w.line for k, w in la.cut.below.items()} == {
        "trainer.nnodes": 4,
        "data.x.y": 7,
    }


def test_a_blank_after_the_backslash_is_an_argument(tmp_path):
    """`\\ ` is an escaped blank: bash passes " " to the launch, which the grammar drops, and
    the line ends the command there."""
    text = "python3 -m verl.trainer.main_ppo a.b=1 \\  # why\n  trainer.nnodes=2\n"
    [d], [la] = cuts(text, tmp_path)
    assert (
        (d.span.line, d.span.col) == (2, 3)
        and "the `\\ ` at line 1" in d.message
        and "OverrideParseException" in d.message
    )
    assert (la.cut.blank.line, la.cut.blank.col, la.cut.blank.end_col) == (1, 40, 42)
    assert (
        subprocess.run(["bash", "-c", "printf '[%s]' a.b=1 \\  # why\n"], capture_output=True, text=True).stdout
        == "[a.b=1][ ]"
    )


@pytest.mark.parametrize(
    "text",
    [
        "MODEL=m\nevalplus.codegen --model $MODEL --greedy\n",  # a dotted command name: no `=`
        "python3 -m verl.trainer.main_ppo a.b=1\nevalplus.codegen --model m\n",
        "echo start \\\n# note\n  trainer.nnodes=2\n",  # not below a launch
        "python3 -m verl.trainer.main_ppo a.b=1; trainer.nnodes=2\n",  # on the launch's own line
        "python3 -m verl.trainer.main_ppo a.b=1\nX=1\n  trainer.nnodes=2\n",  # a statement between them
    ],
)
def test_no_cut_without_a_launch_right_above(text, tmp_path):
    assert cuts(text, tmp_path)[0] == []


def test_an_assignment_split_by_the_grammar_is_one_assignment(tmp_path):
    """tree-sitter-bash ends `L=$D/$` at the bare `$` and reads `RUN.log` as a command name; bash
    sees one assignment. Also after `export` and as a command's prefix."""
    text = "D=/logs\nRUN=r1\nL=$D/$RUN.log\nexport O=$D/$RUN.out\nP=$D/$RUN.p python3 -m m a=$L b=$O\n"
    la, result = one_launch(text, tmp_path)
    assert words(la) == ["a=/logs/r1.log", "b=/logs/r1.out"] and la.env["P"].value == "/logs/r1.p"
    assert [c.words[0].text for c in result.commands] == ["python3"]


def test_conditions_on_known_values_pick_their_branch(tmp_path):
    text = (
        'backend=megatron\nif [[ $backend == "fsdp" ]]; then C=f; elif [ "$backend" = megatron ]; then C=m; else C=x; fi\n'
        'if [ -n "$backend" ]; then E=1; else E=2; fi\n'
        "python3 -m m c=$C e=$E\n"
    )
    la, _ = one_launch(text, tmp_path)
    assert [w.text for w in la.overrides] == ["c=m", "e=1"]


@pytest.mark.parametrize(
    "text",
    [
        "shopt -s extglob\nls !(foo)\n",
        'case "$x" in\n  *.@(sh|bash)) echo;;\nesac\n',
        "[ \\( -n a \\) ]\n",
    ],
)
def test_grammar_gaps_bash_accepts_are_not_syntax_errors(text):
    """tree-sitter-bash rejects these; bash parses them: no VL001."""
    assert parser().parse(text.encode()).root_node.has_error  # still a gap of the grammar
    assert [d.code for d in evaluate("/tmp/x.sh", text).diagnostics if d.code == "VL001"] == []


def test_a_real_syntax_error_is_still_reported():
    result = evaluate("/tmp/x.sh", "if then\n(\necho hi\n")
    assert any(d.code == "VL001" for d in result.diagnostics)


def test_self_append_is_not_a_use_before_assignment():
    text = 'ARGS="$ARGS --foo"\nARGS="$ARGS --bar"\necho $LATE\nLATE=1\n'
    found = [(d.code, d.span.line) for d in evaluate("/tmp/x.sh", text).diagnostics]
    assert found == [("VL002", 3)]


SELF_APPENDS = 'X="$X --a"\nX+=" --b"\nexport P="$P:/x"\nY="${Y} -y"\nf() { Z="$Z z"; }\nf\nfor i in 1 2; do W="$W w$i"; done\nN=$((N + 1))\n'


def test_self_appends_in_every_form_are_not_used_before_assignment():
    """Issue #17: `X="$X --flag"`, `X+=...`, `export P="$P:..."`, in a function or a loop, read
    X in its own (first) assignment: bash runs them without complaint, and VL002 stays silent."""
    shown = 'printf "%s|" "$X" "$P" "$Y" "$Z" "$W" "$N"'
    real = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", SELF_APPENDS + shown],
        env={},
        capture_output=True,
        text=True,
        check=True,
    )
    assert real.stdout == " --a --b|:/x| -y| z| w1 w2|1|"
    assert [d.code for d in evaluate("/tmp/x.sh", SELF_APPENDS + "echo $LATE\nLATE=1\n").diagnostics] == ["VL002"]


def test_a_command_whose_words_expand_to_nothing():
    """Found by bench/fuzz.py (seed 0, case 6825): an empty array as the whole command."""
    result = evaluate("/tmp/x.sh", 'A=()\n"${A[@]}"\n"${A[@]}" "${A[@]}" > log\n')
    assert result.diagnostics == []


def test_a_declared_variable_is_not_used_before_assignment(tmp_path):
    """`declare -A CACHE` declares the array: an element read in a function that fills the
    cache later is not a use before assignment; a plain use before any assignment still is."""
    text = (
        'declare -A CACHE\nlabel() {\n  if [ -n "${CACHE[$1]+x}" ]; then echo "${CACHE[$1]}"; return; fi\n'
        '  CACHE[$1]="gpu$1"\n}\nlabel 0\nlocal_only() { local V; echo "$V"; V=1; }\nlocal_only\n'
        'echo "$LATE"\nLATE=1\n'
    )
    found = [(d.code, d.span.line) for d in evaluate(str(tmp_path / "s.sh"), text).diagnostics]
    assert found == [("VL002", 9)]


TILDE_ASSIGNMENTS = r"""A=~/a
B=x:~/b
C=~
D=${U:-~/d}
E="${U:-~/e}"
F="~/f"
G=a=~/g
H=~/h:~/i
I=pre~/h
export L=~/l
T=${U:-a:~/t}
W=\~/w
V=/v
Z=~$V
Q=x:"~"/q
R=~"/r"
S=~/"s"
""".splitlines()
TILDE_ARGS = r'data.path=~/x ~/x --opt=~/y a:~/z a=~/x b=x:~/y 1a=~/z a.b=~/v a+=~/u ${U:-a:~/t} ${U:-~/t} x${U:-~/t} "~/x" ~"/x" ~/"x" a=${U:-x:~/t} \~/x x~/y ~trainer.val_before_train ~a.b:~/c'


def test_tilde_expansion_matches_bash():
    """Where bash expands `~` (the start of a word or of an assignment's value, after `:` in an
    assignment, in an unquoted `${V:-~/x}`, in arguments shaped like assignments) the value is
    unknown: the home directory is the user's, never the linter's. Everywhere else the text stays."""
    home = "/nonexistent/home-of-the-user"
    names = [line.split("=")[0].split()[-1] for line in TILDE_ASSIGNMENTS]
    text = (
        "\n".join(TILDE_ASSIGNMENTS)
        + "\n"
        + "".join(f'printf "%s\\n" "${n}"\n' for n in names)
        + f'printf "%s\\n" {TILDE_ARGS}\n'
    )
    real = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", text], env={"HOME": home}, capture_output=True, text=True, check=True
    )
    expected = real.stdout.splitlines()
    result = evaluate("/tmp/tilde.sh", text)
    got = [w for c in result.commands if c.words and c.words[0].text == "printf" for w in c.words[2:]]
    assert len(got) == len(expected) == len(names) + len(TILDE_ARGS.split())
    for want, w in zip(expected, got):
        if home in want:
            assert w.text is None and "home directory" in w.unknown.reason, (want, w)
        else:
            assert w.text == want, (want, w)


def test_blanks_inside_double_quotes_match_bash():
    """tree-sitter-bash puts the blank before a `${` inside the expansion node; the value keeps
    it, as bash does (verl's own sft test script builds `torchrun ... ${ENTRYPOINT}` this way)."""
    text = (
        'N=2\nE="-m verl.trainer.sft_trainer"\nA=1\nB=2\n'
        'C="torchrun --nproc-per-node=${N:-1} ${E}"\nD="$A ${B}"\nF="x  ${B}y	${A}"\nG=" ${A}${B} "\n'
        'printf "%s\\n" "$C" "$D" "$F" "$G"\nprintf "%s\\n" $C\n'
    )
    real = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", text], env={}, capture_output=True, text=True, check=True
    )
    result = evaluate("/tmp/blanks.sh", text)
    got = [w.text for c in result.commands if c.words and c.words[0].text == "printf" for w in c.words[2:]]
    assert got == real.stdout.splitlines() and len(got) == 8


def test_ansi_c_quoting_matches_bash():
    """`$'...'`: named escapes, octal, hex, \\u, \\c control characters, and a backslash before
    anything else kept, as bash expands them (a NUL would end the string there: not tested)."""
    words = [
        r"$'a\tb\x41\x4a'",
        r"$'\101\0123'",
        r"$'\u00e9\U0001F600'",
        r"$'a\UFFFFFFFFb'",
        r"$'\cA\e[0m'",
        r"$'\q\'x\\\\\?'",
        r"$'x=\\n'",
    ]
    text = "printf '%s|' " + " ".join(words) + "\n"
    real = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", text], env={"LC_ALL": "C.UTF-8"}, capture_output=True, check=True
    )
    [cmd] = evaluate("/tmp/ansi.sh", text).commands
    assert "".join(w.text + "|" for w in cmd.words[2:]).encode() == real.stdout


EDITS = (
    "${X#*/} ${X##*/} ${X%/*} ${X%%.*} ${X/Qwen/q} ${X//Qwen/q} ${X^^} ${X,,} ${X^} ${A,} ${X:1:7} ${X: -3} ${X:2} "
    "${X: -40} ${X:3:-4} ${X/%gz/xz} ${X/#?models/m} ${X//[0-9]/N} ${X#?} ${A//X} ${A/X} ${E#x} ${X##*[/.]} "
    '${X/Qwen/c"$D"e} "${X#"/models"}" ${X//[Qq]wen/} "${X:0:0}"'
)


def test_string_editing_expansions_match_bash():
    """`${X#p}`, `${X%%p}`, `${X//p/r}`, `${X^^}`, `${X:o:l}`... on known values give bash's
    words (an empty unquoted result is no word); a pattern the grammar splits wrongly (an escape,
    quotes inside it) or an extglob stays unknown rather than guessed."""
    text = f'X=/models/Qwen/Qwen2.5-7B.tar.gz\nA=aXbXc\nE=""\nD=dd\nprintf "%s|" {EDITS}\n'
    unsure = 'printf "%s|" ${X/#\\/models/m} "${X#*"$D"}" ${X%%+([0-9])} ${X/a/&}\n'
    real = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", text], env={}, capture_output=True, text=True, check=True
    )
    known, unknown = (c.words[2:] for c in evaluate("/tmp/edits.sh", text + unsure).commands)
    assert "".join(f"{w.text}|" for w in known) == real.stdout and len(known) == 25
    assert [w.text for w in unknown] == [None] * 4 and all(
        "not evaluated statically" in w.unknown.reason for w in unknown
    )


EVAL_AGAIN = r"""BASE="a.b=8 c.d=['w'] e.f='G H' x\ y"
M=Qwen
CMD="printf %s^ ${BASE} g.h='\"${M}\"' k=\"x  y\" l=a\\\\b"
eval $CMD
"""


def test_eval_parses_the_words_again_as_bash_does():
    """`eval $CMD`: bash joins the words and parses them again: quotes kept in the value are
    removed, a quote opened in one word closes in the next, a backslash escapes a blank."""
    real = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", EVAL_AGAIN], env={}, capture_output=True, text=True, check=True
    )
    [cmd] = evaluate("/tmp/eval.sh", EVAL_AGAIN).commands
    again = _parsed_again(cmd.words[1:])
    assert [w.text for w in again[2:]] == real.stdout.split("^")[:-1] and len(again) == 9
    assert {w.span.line for w in again} == {3}  # where the value was written


def test_eval_of_a_value_with_unknown_parts_keeps_what_is_known(tmp_path):
    """A value built with `$@` and `$RUN` (Logic-RL's curriculum script): split on its known
    blanks, each unknown part stays inside its word, and the launch is analysed, once per iteration."""
    text = (
        "BASE=\"data.train_batch_size=8 trainer.logger=['wandb']\"\n"
        "for ppl in 3 4; do\n"
        '  CMD="python3 -m verl.trainer.main_ppo ${BASE} data.train_files=./data/${ppl}/${RUN}.parquet \\\n'
        '      actor_rollout_ref.model.path=\'\\"m\\"\' $@"\n'
        "  eval ${CMD}\n"
        "  eval ${CMD} \\'\n"  # a quote nothing closes: bash fails, not analysable
        "done\n"
    )
    p = tmp_path / "s.sh"
    p.write_text(text)
    first, second, *later = launches(evaluate(str(p), text).commands, str(p), text)
    assert [(w.text, w.prefix) for w in first.overrides] == [
        ("data.train_batch_size=8", ""),
        ("trainer.logger=[wandb]", ""),
        (None, "data.train_files=./data/3/"),
        ('actor_rollout_ref.model.path="m"', ""),
    ]
    assert first.variant == ("in the iteration of line 2 where `ppl=3`",) and len(later) == 2  # once per iteration
    assert first.caller_args is not None and first.not_analysable is None
    assert second.not_analysable is not None


@pytest.mark.slow
def test_tilde_in_an_assignment_is_not_a_hydra_parse_error(lint):
    """`FILES=~/data/x` reaches Hydra as `/home/<user>/data/x`; `data.path=~/x` as an argument
    reaches it with the `~` (data.path is no shell name), which Hydra cannot parse."""
    report = lint(
        "TRAIN=~/data/train.parquet\npython3 -m verl.trainer.main_ppo data.train_files=$TRAIN data.val_files=~/data/val.parquet actor_rollout_ref.rollout.name=vllm\n"
    )
    assert [(d.code, d.span.col) for d in report.diagnostics] == [("VL102", 58)]


def local_imports(path: Path) -> list[tuple[int, str]]:
    """(line, text) of each import inside a function or class of `path`."""
    tree = ast.parse(path.read_text())
    top = {id(n) for n in tree.body}
    top |= {id(x) for n in tree.body if isinstance(n, (ast.If, ast.Try)) for x in ast.walk(n)}
    lines = path.read_text().splitlines()
    return [
        (n.lineno, lines[n.lineno - 1].strip())
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in top
    ]


PACKAGE = Path(__file__).parent.parent / "verl_lint"
FRONT_END = sorted([*PACKAGE.glob("shell/*.py"), *PACKAGE.glob("launch/*.py")])


@pytest.mark.parametrize("path", FRONT_END, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_front_end_modules_are_small_with_imports_at_module_level(path):
    """shell/ and launch/ (issue #19): no module over 600 lines; a function-local import only
    when optional by design, and then it says why on its line."""
    assert len(path.read_text().splitlines()) < 600
    assert all("# optional" in text for _, text in local_imports(path)), local_imports(path)
