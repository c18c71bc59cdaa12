"""A real @hydra.main app for the callback tests (run as a subprocess).

Run it on a verl release's trainer config, with the callback enabled from the command line:

    python lint_app.py --config-dir <verl>/verl/trainer/config --config-name ppo_trainer \
        +hydra.callbacks.verl_lint._target_=verl_lint.callback.VerlLintCallback [overrides]

The task function writes a JSON marker to $LINT_APP_MARKER: that the task ran, a few
config values, which heavy modules (torch, vllm, verl, ...) were imported by then, and every
module that was executed (a module still waiting for its lazy load does not count).
"""

import json
import os
import sys
import types

import hydra

HEAVY = ("torch", "torch_npu", "vllm", "verl", "sglang", "ray")


@hydra.main(config_path=None, config_name=None, version_base=None)
def main(cfg) -> None:
    marker = os.environ.get("LINT_APP_MARKER")
    if marker:
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in HEAVY)
        # type() does not trigger a lazy module's load; a loaded one is a plain module again.
        executed = sorted(m for m, mod in list(sys.modules.items()) if type(mod) is types.ModuleType)
        with open(marker, "w", encoding="utf-8") as f:
            json.dump(
                {
                    "ran": True,
                    "train_batch_size": cfg.data.train_batch_size,
                    "heavy_modules": loaded,
                    "modules": executed,
                },
                f,
            )
    print("TASK RAN", flush=True)


if __name__ == "__main__":
    main()
