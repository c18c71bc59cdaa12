"""A callback whose on_job_start raises a plain Exception: Hydra 1.3 swallows it (see test)."""

from hydra.experimental.callback import Callback


class RaisingCallback(Callback):
    def on_job_start(self, config, **kwargs):
        raise RuntimeError("callback said stop")
