"""The oracle's launches: a seeded generator over the keys verl's size validation reads.

Each launch starts from a consistent FSDP + vLLM GRPO or GAE launch (every size divides as verl
wants) and then gets zero, one or two faults, each a change a user makes by hand: a micro batch
that does not divide, the deprecated global key instead of `_per_gpu`, dynamic batch size on one
side only, a sequence-parallel size that does not divide the GPUs, ... Whether the result is
wrong is not the generator's to say: verl's own code judges it (tests/oracle_judge.py).
"""

from __future__ import annotations

import random

A = "actor_rollout_ref.actor"
R = "actor_rollout_ref.rollout"
REF = "actor_rollout_ref.ref"


def _divisors(x: int) -> list[int]:
    return [d for d in range(1, x + 1) if x % d == 0]


def valid(rng: random.Random) -> dict[str, object]:
    """A launch whose sizes all divide as verl's checks want."""
    per_node, nodes = rng.choice([1, 2, 4, 8]), rng.choice([1, 1, 2])
    n_gpus = per_node * nodes
    sp = rng.choice([d for d in _divisors(n_gpus) if d <= 4])
    dp = n_gpus // sp
    n = rng.choice([1, 2, 4, 5, 8])
    micro = rng.choice([1, 2, 4])
    # the per-GPU mini batch is a multiple of the micro batch; the mini batch × n splits over dp
    per_gpu_mini = micro * rng.choice([1, 2, 4])
    mini_total = per_gpu_mini * dp
    mini = mini_total // n if mini_total % n == 0 else None
    if mini is None:
        n, mini = 1, mini_total
    train = mini * rng.choice([1, 2, 4])
    while (train * n) % n_gpus:
        train += mini
    kl = rng.random() < 0.5
    gae = rng.random() < 0.3
    s: dict[str, object] = {
        "trainer.n_gpus_per_node": per_node,
        "trainer.nnodes": nodes,
        "data.train_batch_size": train,
        "data.max_prompt_length": 512,
        "data.max_response_length": 512,
        f"{R}.n": n,
        f"{R}.name": "vllm",
        f"{R}.tensor_model_parallel_size": rng.choice([d for d in _divisors(per_node) if d <= 4]),
        f"{A}.ppo_mini_batch_size": mini,
        f"{A}.ppo_micro_batch_size_per_gpu": micro,
        f"{A}.ulysses_sequence_parallel_size": sp,
        f"{R}.log_prob_micro_batch_size_per_gpu": micro,
        f"{A}.use_kl_loss": kl,
        "algorithm.adv_estimator": "gae" if gae else "grpo",
    }
    if sp > 1:
        s["actor_rollout_ref.model.use_remove_padding"] = True
    if kl:
        s[f"{REF}.log_prob_micro_batch_size_per_gpu"] = micro
    if gae:
        s["critic.ppo_micro_batch_size_per_gpu"] = micro
    if rng.random() < 0.2:
        for k in (f"{A}.use_dynamic_bsz", f"{R}.log_prob_use_dynamic_bsz"):
            s[k] = True
        s[f"{A}.ppo_max_token_len_per_gpu"] = 4096
        s[f"{R}.log_prob_max_token_len_per_gpu"] = 4096
    return s


def _global_micro(s, rng):
    key = rng.choice([f"{A}.ppo_micro_batch_size", f"{R}.log_prob_micro_batch_size"])
    per_gpu = s.pop(f"{key}_per_gpu", 1)
    n_gpus = s["trainer.n_gpus_per_node"] * s["trainer.nnodes"]
    s[key] = per_gpu * n_gpus


def _both_micro(s, rng):
    key = rng.choice([f"{A}.ppo_micro_batch_size", f"{R}.log_prob_micro_batch_size"])
    s[key] = s.get(f"{key}_per_gpu", 1) * 8


def _no_micro(s, rng):
    keys = [
        k
        for k in (
            f"{A}.ppo_micro_batch_size_per_gpu",
            f"{R}.log_prob_micro_batch_size_per_gpu",
            f"{REF}.log_prob_micro_batch_size_per_gpu",
        )
        if k in s
    ]
    s.pop(rng.choice(keys))


def _micro(s, rng):
    keys = [
        k
        for k in (
            f"{A}.ppo_micro_batch_size_per_gpu",
            f"{R}.log_prob_micro_batch_size_per_gpu",
            f"{REF}.log_prob_micro_batch_size_per_gpu",
            "critic.ppo_micro_batch_size_per_gpu",
        )
        if k in s
    ]
    s[rng.choice(keys)] = rng.choice([3, 6, 8, 16, 32])


def _mini(s, rng):
    s[f"{A}.ppo_mini_batch_size"] = rng.choice([3, 6, 12, 24, 40, 1000])


def _critic_mini(s, rng):
    s["algorithm.adv_estimator"] = "gae"
    s.setdefault("critic.ppo_micro_batch_size_per_gpu", 1)
    s["critic.ppo_mini_batch_size"] = rng.choice([3, 6, 12, 24, 1000])


def _train(s, rng):
    s["data.train_batch_size"] = rng.choice([6, 10, 30, 50, 100, 1000])


def _n(s, rng):
    s[f"{R}.n"] = rng.choice([3, 6, 7])


def _gpus(s, rng):
    s["trainer.n_gpus_per_node"] = rng.choice([3, 6, 8, 16])


def _sp(s, rng):
    s[f"{A}.ulysses_sequence_parallel_size"] = rng.choice([2, 3, 4, 8])
    s["actor_rollout_ref.model.use_remove_padding"] = True


def _tp(s, rng):
    s[f"{R}.tensor_model_parallel_size"] = rng.choice([3, 4, 8])


def _dynamic_one_side(s, rng):
    key = rng.choice([f"{A}.use_dynamic_bsz", f"{R}.log_prob_use_dynamic_bsz"])
    s[key] = not s.get(key, False)
    s.setdefault(f"{A}.ppo_max_token_len_per_gpu", 4096)
    s.setdefault(f"{R}.log_prob_max_token_len_per_gpu", 4096)


def _ref_on(s, rng):
    s[f"{A}.use_kl_loss"] = True
    if rng.random() < 0.5:
        s.pop(f"{REF}.log_prob_micro_batch_size_per_gpu", None)


FAULTS = [
    _global_micro,
    _both_micro,
    _no_micro,
    _micro,
    _mini,
    _critic_mini,
    _train,
    _n,
    _gpus,
    _sp,
    _tp,
    _dynamic_one_side,
    _ref_on,
]


def launches(seed: int, count: int) -> list[dict]:
    """`count` launches: {"id", "faults", "settings"}; a third valid, the rest with one or two faults."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        s = valid(rng)
        faults = rng.sample(FAULTS, rng.choice([0, 1, 1, 2, 2]))
        for fault in faults:
            fault(s, rng)
        out.append({"id": i, "faults": [f.__name__.strip("_") for f in faults], "settings": s})
    return out


def overrides(settings: dict[str, object]) -> list[str]:
    return [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in settings.items()]


def script(settings: dict[str, object]) -> str:
    """The launch as a shell script, one override a line."""
    return "python3 -m verl.trainer.main_ppo \\\n" + " \\\n".join(f"    {o}" for o in overrides(settings)) + "\n"
