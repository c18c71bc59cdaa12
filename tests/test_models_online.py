"""`--models online`: a hub model's config.json alone, from a hub served on 127.0.0.1 (the
downloader honours huggingface_hub's HF_ENDPOINT), kept in verl-lint's cache; a model the hub
lacks stays unknown, a bad answer is one line, and nothing is fetched without the opt-in."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import codes
from test_models import CONFIG

from verl_lint.models import MAX_CONFIG_BYTES, ModelFacts, ModelProblem, resolve
from verl_lint.registry import main_ppo
from verl_lint.settings import load_settings

R = "actor_rollout_ref.rollout"
M = "actor_rollout_ref.model"
FILES = {
    "/acme/online-gqa/resolve/main/config.json": json.dumps(CONFIG).encode(),
    "/acme/not-json/resolve/main/config.json": b"<html>rate limited</html>",
    "/acme/huge/resolve/main/config.json": b"{" + b" " * MAX_CONFIG_BYTES + b"}",
}


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """A hub on 127.0.0.1 serving FILES; the paths it was asked for."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            asked.append(self.path)
            body = FILES.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setenv("VERL_LINT_CACHE_DIR", str(tmp_path / "cache"))
    yield asked
    server.shutdown()
    server.server_close()


def test_config_json_alone_from_the_hub_then_offline(hub, tmp_path):
    assert resolve("acme/online-gqa", {}) is None and hub == []  # offline by default: nothing asked
    facts = resolve("acme/online-gqa", {}, online=True)
    assert isinstance(facts, ModelFacts) and facts.heads == 12 and facts.kv_heads == 2
    assert "--models online" in facts.source and hub == ["/acme/online-gqa/resolve/main/config.json"]
    kept = tmp_path / "cache" / "models" / "models--acme--online-gqa" / "config.json"
    assert json.loads(kept.read_text()) == CONFIG
    from verl_lint.models import _resolve

    _resolve.cache_clear()
    assert (
        isinstance(resolve("acme/online-gqa", {}, online=True), ModelFacts) and len(hub) == 1
    )  # read back, not asked again


def test_what_the_hub_lacks_or_garbles(hub):
    assert resolve("acme/absent", {}, online=True) is None  # 404: unknown, as offline
    bad = resolve("acme/not-json", {}, online=True)
    assert isinstance(bad, ModelProblem) and "is not a JSON config" in bad.message and "\n" not in bad.message
    huge = resolve("acme/huge", {}, online=True)
    assert isinstance(huge, ModelProblem) and "larger than 4 MiB" in huge.message
    # the table and the local sources come first: no request for a model they know
    assert isinstance(resolve("Qwen/Qwen2.5-7B-Instruct", {}, online=True), ModelFacts) and "/Qwen/" not in "".join(hub)


def test_the_rules_judge_an_online_model(hub, lint):
    script = main_ppo(f"{M}.path=acme/online-gqa", f"{R}.tensor_model_parallel_size=8")
    assert codes(lint(script, models_online=True)) == ["VL320"]  # 12 heads over TP 8
    assert codes(lint(script)) == ["VL329"]


def test_models_setting(tmp_path):
    f = tmp_path / "verl-lint.toml"
    f.write_text('models = "online"\n')
    assert load_settings(f).models == "online"
    f.write_text('models = "onlne"\n')
    with pytest.raises(ValueError, match="must be one of offline, online"):
        load_settings(f)
