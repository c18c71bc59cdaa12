"""7xx: `engine_kwargs.vllm.*` / `engine_kwargs.sglang.*` against the engine and against verl.

Every key under `<rollout>.engine_kwargs.<engine>` is checked twice (only keys the user set, in
the script or their own config files, are findings on the script: a problem in verl's shipped
defaults is one info per run):

- against the engine release (`verl_lint.engines.schemas.schema_for`): `vllm serve` rejects an
  unknown option, SGLang's `ServerArgs(**args)` an unknown keyword (VL701);
- against the synchronous rollout's own keywords (verl <= 0.6: `LLM(..., **engine_kwargs)`), where
  a key given twice is a TypeError (VL706);
- against how the linted verl tree assembles the server arguments
  (`verl_lint.engines.assembly.assembly_of`, read from its `launch_server` with ast): does your value
  replace something verl derives from its own config (VL702 when that breaks verl's worker
  mapping, VL704 otherwise), or does verl overwrite it afterwards (VL703)? The source
  conditions are evaluated on the composed config, so `enable_expert_parallel` is reported
  as overwritten on verl 0.9.1 (unconditional `args.update`) and as bypassing verl's setup
  on verl 0.7.1 (set only when `expert_parallel_size > 1`) — without a hand list.
"""

from __future__ import annotations

from ..registry import rule
from .engine_kwargs_checks import analyse

# ------------------------------------------------------------------ rules ----


@rule(
    "VL701",
    "unknown-engine-kwarg",
    "error",
    producer=analyse,
    engines=("vllm", "sglang"),
)
def unknown_engine_kwarg():
    """An `engine_kwargs` key that the rollout engine does not accept.

    ## What it does
    Checks every key under `<rollout>.engine_kwargs.vllm` / `.sglang` against the argument
    list of the engine release: the fields of vLLM's `EngineArgs`/`AsyncEngineArgs`, its
    front-end `*Args` classes and the `--options` of the `vllm serve` parser, or SGLang's
    `ServerArgs` fields — read with `ast` from the installed engine, else from the bundled
    snapshots. The releases come from evidence: `--vllm` / `--sglang` (or the
    `[tool.verl-lint]` setting), the installed engine, else the range the verl tree and the
    project declare — an error where every release in it rejects the key, a warning naming
    the releases where only some do; with no evidence only a key no release has is reported
    (VL010 says what stayed silent). Says "removed in vLLM X" or "only exists from" when
    another release has the key, and suggests the closest real argument. A key set by verl's
    own shipped config, not by you, is reported once per run as info.

    ## Why is this bad?
    verl hands the keys to `vllm serve` as `--key value` (argparse: `unrecognized
    arguments`) or to `ServerArgs(**args)` (`TypeError`): the job dies when the rollout
    server starts, minutes in, after Ray, the model download and the trainer workers.

    ## Use instead
    The argument the did-you-mean names, or the replacement of a removed one
    (`cuda_graph_sizes` → `compilation_config.cudagraph_capture_sizes` on vLLM >= 0.13).

    ## Where in verl
    0.9.1 `verl/workers/rollout/vllm_rollout/vllm_async_server.py:349` (`**engine_kwargs` into
    the `vllm serve` arguments) and `utils.py:477` (`build_cli_args_from_config`);
    0.9.1 `verl/workers/rollout/sglang_rollout/async_sglang_server.py:340,424` (`ServerArgs(**args)`).
    """


@rule(
    "VL702",
    "engine-kwarg-breaks-worker-mapping",
    "error",
    producer=analyse,
    verl=">=0.6.0",
)
def engine_kwarg_breaks_mapping():
    """An engine kwarg replaces a topology or lifecycle value that verl builds its workers from.

    ## What it does
    For engine arguments that verl derives from its own rollout config to place and drive
    the workers (vLLM `tensor_parallel_size`, `data_parallel_*`, `pipeline_parallel_size`,
    `distributed_executor_backend`, `worker_extension_cls`, `nnodes`/`node_rank`,
    `enable_sleep_mode`; SGLang `tp_size`, `dp_size`, `ep_size`, `base_gpu_id`,
    `enable_memory_saver`, ...; listed in `rules/engine_args/verl_knobs.yaml`), reads from
    the linted verl's `launch_server` whether your engine kwarg reaches the engine (set
    before `**engine_kwargs`, or after it only under a condition that does not hold) and
    compares it with verl's value evaluated on the composed config. Equal values are fine.

    ## Why is this bad?
    verl sizes replicas, creates one worker per GPU, and syncs weights and sleeps/wakes the
    engine from `rollout.tensor_model_parallel_size`, `data_parallel_size`,
    `enable_sleep_mode`... The engine kwarg changes only the engine side: the two disagree,
    which hangs, maps weights to the wrong ranks, OOMs the trainer (sleep mode off while
    verl still frees/offloads), or fails an assertion at start-up.

    ## Use instead
    verl's own knob: `actor_rollout_ref.rollout.tensor_model_parallel_size`,
    `data_parallel_size`, `+actor_rollout_ref.rollout.enable_sleep_mode=False`, ...

    ## Where in verl
    0.9.1 `verl/workers/rollout/vllm_rollout/vllm_async_server.py:325-349` (verl's keys before
    `**engine_kwargs`) and `:384-413` (data-parallel / multi-node keys set afterwards only when
    DP > 1 / nnodes > 1); its own comment at `:1158`: "engine_kwargs is forwarded verbatim to
    vLLM, so close topology override paths that would bypass VERL's worker and IPC mapping".
    0.9.1 `async_sglang_server.py:313-340`; 0.7.1 `vllm_async_server.py:302-326`.
    """


@rule(
    "VL703",
    "engine-kwarg-overwritten-by-verl",
    "error",
    producer=analyse,
    verl=">=0.6.0",
)
def engine_kwarg_overwritten():
    """verl overwrites an engine kwarg after spreading `engine_kwargs`, so your value is lost.

    ## What it does
    Reads the linted verl's `launch_server` with `ast`: every `args.update({...})`,
    `args[k] = ...` after the dict literal that spreads `**engine_kwargs`, and every
    `engine_kwargs[k] = ...` before it, with the `if` conditions around them. The
    conditions are evaluated on the composed config; an unconditional or true one is an
    error, an unknown one (`self.nnodes > 1`) a warning. Silent when verl's value equals
    yours. On verl 0.9.1 this covers `enable_expert_parallel` (always
    `expert_parallel_size > 1`); on 0.7.1 the same key is only overwritten when
    `expert_parallel_size > 1`, otherwise VL704 reports it.

    ## Why is this bad?
    The run silently uses verl's value: `enable_expert_parallel=True` becomes `False` with
    the default `expert_parallel_size=1`, so a MoE model runs without expert parallelism
    (slower, or out of memory), and nothing in the logs says why.

    ## Use instead
    The verl knob the value is derived from, e.g.
    `actor_rollout_ref.rollout.expert_parallel_size=<TP×DP>` (the help computes it),
    `actor_rollout_ref.rollout.limit_images`, `actor_rollout_ref.rollout.prometheus.served_model_name`.

    ## Where in verl
    0.9.1 `verl/workers/rollout/vllm_rollout/vllm_async_server.py:402`
    (`args.update({"enable_expert_parallel": self.config.expert_parallel_size > 1})`), `:290`
    (`limit_mm_per_prompt` from `limit_images`), `:368-454`; 0.7.1 `:354-371` (inside
    `if self.config.expert_parallel_size > 1`), `:220` (`cuda_graph_sizes`);
    0.9.1 `async_sglang_server.py:343-418`.
    """


@rule(
    "VL704",
    "engine-kwarg-bypasses-verl-setting",
    "warning",
    producer=analyse,
    verl=">=0.6.0",
)
def engine_kwarg_bypasses_verl():
    """An engine kwarg replaces a value verl passes from its own config, which verl keeps using.

    ## What it does
    Reports engine kwargs that override a key verl sets in the server-argument literal before
    `**engine_kwargs` (`max_model_len`, `gpu_memory_utilization`, `seed`, `dtype`,
    `load_format`, `mem_fraction_static`, ...) with a different value, and keys that verl
    sets itself only under a condition that does not hold (verl 0.7.1:
    `enable_expert_parallel` without `expert_parallel_size > 1`). Read from the linted
    verl's source, evaluated on the composed config.

    ## Why is this bad?
    The engine runs with your value while verl's own code still reads the rollout config:
    `max_tokens` computed from `rollout.max_model_len`, batch-token checks, the per-replica
    seed `replica_rank + seed` (one engine seed for all replicas), expert parallelism without
    the data-parallel wiring verl adds with it.

    ## Use instead
    The rollout config key the help names (`actor_rollout_ref.rollout.max_model_len=...`,
    `actor_rollout_ref.rollout.expert_parallel_size=<TP×DP>`), not the engine kwarg.

    ## Where in verl
    0.9.1 `verl/workers/rollout/vllm_rollout/vllm_async_server.py:325-349`; 0.7.1
    `:302-326` and `:354-371`; 0.9.1 `verl/workers/rollout/sglang_rollout/async_sglang_server.py:314-340`.
    """


@rule(
    "VL706",
    "engine-kwarg-passed-twice",
    "error",
    producer=analyse,
)
def engine_kwarg_passed_twice():
    """An engine kwarg that verl's synchronous rollout already passes as a keyword of the same call.

    ## What it does
    Reads, with `ast`, the calls under the tree's `verl/workers/rollout/<engine>_rollout/` that
    spread `**engine_kwargs` next to keywords of their own (`LLM(model=..., seed=...,
    enable_prefix_caching=True, **engine_kwargs)` in verl 0.5's `vllm_rollout_spmd.py`), and
    reports an engine kwarg that every such call already names, when the rollout runs in sync
    mode (the mode those calls serve; verl 0.7 and later have none, and build the server's
    arguments as a dict, where VL703 and VL704 apply). A key the function pops first is not
    counted, nor a null value (verl drops those).

    ## Why is this bad?
    Python refuses a keyword given twice: `TypeError: LLM() got multiple values for keyword
    argument 'enable_prefix_caching'` when the rollout worker builds its engine, after Ray, the
    model download and the trainer workers are up.

    ## Use instead
    The rollout config key verl reads for it (`actor_rollout_ref.rollout.enforce_eager`, ...),
    or nothing when verl hard-codes the value.

    ## Where in verl
    0.5.0 `verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py:165-185`; 0.6.1 the same file;
    0.4.1 imports `vllm_rollout.py` instead for vLLM <= 0.6.3 (`vllm_rollout/__init__.py`), whose
    call lacks that keyword: there the vLLM version decides which call runs (installed, or
    `--vllm`), and without it only keys both calls name are reported.
    """


@rule(
    "VL705",
    "engine-kwargs-for-inactive-engine",
    "warning",
    producer=analyse,
)
def engine_kwargs_inactive():
    """`engine_kwargs.<engine>` is set for an engine the rollout does not run.

    ## What it does
    Flags keys under `<rollout>.engine_kwargs.vllm` when `<rollout>.name` is `sglang` (and
    the other way round).

    ## Why is this bad?
    The vLLM server reads only `engine_kwargs.vllm`, the SGLang server only
    `engine_kwargs.sglang`: the setting is silently dropped, usually after switching the
    rollout engine and forgetting to translate its arguments.

    ## Use instead
    The equivalent argument of the engine in use, under its own `engine_kwargs` key.

    ## Where in verl
    0.9.1 `verl/workers/rollout/vllm_rollout/vllm_async_server.py:287,1130`
    (`engine_kwargs.get("vllm")`) and `verl/workers/rollout/sglang_rollout/async_sglang_server.py:276`
    (`engine_kwargs.get("sglang")`).
    """
