"""`evalward serve` as a real process: settings from flags, variables and the server file; /healthz on a
real socket; SIGTERM ends it cleanly; secrets never reach its logs."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from tests.server.conftest import SECRET, delivery_headers

from evalward._cli.main import cli
from evalward._server.settings import load_settings
from evalward._server.tokens import hash_token, token_matches
from evalward.errors import EvalFileError


def test_new_token_prints_a_token_and_its_hash() -> None:
    result = CliRunner().invoke(cli, ["serve", "--new-token"])
    assert result.exit_code == 0
    token = result.output.split("token: ")[1].split()[0]
    digest = result.output.split("hash:  ")[1].split()[0]
    assert digest == hash_token(token) and token_matches(token, [digest])


def test_settings_precedence_flag_over_variable_over_file(tmp_path: Path) -> None:
    file = tmp_path / "server.toml"
    file.write_text('[server]\nport = 7000\nworkers = 3\nrun_label = "ok-to-test"\n[server.upload_token_hashes]\n'
                    f'"o/r" = ["{hash_token("t")}"]\n')  # fmt: skip
    env = {"EVALWARD_PORT": "7100", "EVALWARD_WORKERS": "2", "EVALWARD_WEBHOOK_SECRET": "s3cret-value"}
    settings = load_settings(flags={"port": 7200, "workers": None}, environ=env, config_path=str(file))
    assert (settings.port, settings.workers, settings.run_label) == (7200, 2, "ok-to-test")
    assert [s.get_secret_value() for s in settings.webhook_secrets] == ["s3cret-value"]
    assert "s3cret-value" not in repr(settings)
    assert settings.upload_token_hashes == {"o/r": [hash_token("t")]}


def test_bad_settings_name_the_file_and_key(tmp_path: Path) -> None:
    file = tmp_path / "server.toml"
    file.write_text('[server]\nprot = 1\nread_token_hashes = ["ewt_plaintext"]\n')
    with pytest.raises(EvalFileError) as error:
        load_settings(environ={}, config_path=str(file))
    text = str(error.value)
    assert f"{file}: unknown key; at server.prot" in text
    assert "at server.read_token_hashes" in text and "store hashes, never tokens" in text


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
def test_serve_answers_on_a_socket_and_stops_on_sigterm(tmp_path: Path) -> None:
    port = free_port()
    env = {
        **os.environ,
        "EVALWARD_WEBHOOK_SECRET": SECRET,
        "EVALWARD_DB": f"sqlite:///{tmp_path / 'serve.db'}",
        "EVALWARD_WORK_DIR": str(tmp_path / "work"),
        "EVALWARD_SHUTDOWN_GRACE_S": "2",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalward", "serve", "--port", str(port), "--role", "all", "--workers", "1"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                health = httpx.get(url + "/healthz", timeout=2)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.1)
        assert health.json()["status"] == "ok" and health.json()["workers"] == 1
        body = b'{"zen": "Keep it logically awesome."}'
        assert (
            httpx.post(url + "/webhooks/github", content=body, headers=delivery_headers("ping", body)).status_code
            == 200
        )
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    logs = [json.loads(line) for line in stderr.decode().splitlines() if line.startswith("{")]
    messages = [entry["msg"] for entry in logs]
    assert "workers started" in messages and "workers stopped" in messages
    assert SECRET not in stderr.decode()
