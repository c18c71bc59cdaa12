"""3xx sizes of verl's FSDP SFT trainer (`verl.trainer.fsdp_sft_trainer`, verl 0.4-0.6): its data
parallelism is the torchrun world size over the Ulysses sequence-parallel size, which only the
launch command says (`--nproc_per_node`, `--nnodes`)."""

from __future__ import annotations

from ..evidence import Evidence
from ..registry import rule

SFT = Evidence(("verl/trainer/fsdp_sft_trainer.py",), r"is not divisible by dp size")


@rule(
    "VL316",
    "sft-batch-not-divisible",
    "error",
    size_check=True,
    evidence=[SFT],
)
def sft_batch_divisible(ctx):
    """The SFT train batch does not split over the data-parallel ranks and their micro batches.

    ## What it does
    For a torchrun launch of `verl.trainer.fsdp_sft_trainer` whose `--nproc_per_node` (and
    `--nnodes`, else `--standalone` or torchrun's 1) are known numbers, takes the data-parallel
    size as nproc_per_node × nnodes / `ulysses_sequence_parallel_size`, and checks that
    `data.train_batch_size` divides by it and that each rank's share divides by
    `data.micro_batch_size_per_gpu`.

    ## Why is this bad?
    The trainer asserts both ("Global batch size 100 is not divisible by dp size 8") in
    `_normalize_config_bsz`, once torchrun has started every process and they have joined
    the process group.

    ## Use instead
    A train batch size that is a multiple of data-parallel size × micro batch size per GPU.

    ## Where in verl
    verl 0.5.0 `verl/trainer/fsdp_sft_trainer.py:137-148` (`_normalize_config_bsz`) and
    `:766-775` (`run_sft`: the device meshes); verl 0.4.1 the same file. Runs only on a tree
    whose source has that assert.
    """
    procs = [ctx.launch.processes.get(k) for k in ("nproc_per_node", "nnodes")]
    numbers = [w.text if w is not None else "1" for w in procs]  # torchrun: --nnodes defaults to 1
    sp, bsz, micro = (
        ctx.int("ulysses_sequence_parallel_size"),
        ctx.int("data.train_batch_size"),
        ctx.int("data.micro_batch_size_per_gpu"),
    )
    if (
        procs[0] is None
        or not all(n and n.isdigit() for n in numbers)
        or None in (sp, bsz, micro)
        or sp <= 0
        or micro <= 0
    ):
        return
    world = int(numbers[0]) * int(numbers[1])
    if world % sp:
        return  # the device mesh cannot be built: another failure, not this one
    dp = world // sp
    why = f"nproc_per_node × nnodes = {world}" + (f" / ulysses_sequence_parallel_size={sp}" if sp > 1 else "")
    span = None if ctx.user_set("data.train_batch_size") else procs[0].span
    if bsz % dp:
        message = (
            f"data.train_batch_size={bsz} is not divisible by the data-parallel size {dp} ({why}): the SFT "
            "trainer asserts on it at start-up"
        )
        help = f"use a multiple of {dp * micro}, e.g. {max(dp * micro, bsz // (dp * micro) * dp * micro)}"
    elif (bsz // dp) % micro:
        message = (
            f"each of the {dp} data-parallel ranks gets data.train_batch_size={bsz} / {dp} = {bsz // dp}, which is "
            "not divisible by "
            f"data.micro_batch_size_per_gpu={micro}: the SFT trainer asserts on it at start-up"
        )
        help = (
            f"use a micro batch size that divides {bsz // dp}, or a train batch size that is a multiple of {dp * micro}"
        )
    else:
        return
    yield ctx.diag(
        "VL316",
        message,
        key="data.train_batch_size",
        span=span,
        help=help,
        related=["data.micro_batch_size_per_gpu", "ulysses_sequence_parallel_size"],
    )
