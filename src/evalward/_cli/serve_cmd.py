"""`evalward serve`: the GitHub App daemon (webhooks, job queue, workers, JSON API, dashboard)."""

from __future__ import annotations

import signal
import threading
from typing import Any

import click

from evalward._server.app import create_app
from evalward._server.listen import listening_socket, uvicorn_config
from evalward._server.logs import REDACTOR, configure_logging
from evalward._server.runtime import build_pool, build_store
from evalward._server.settings import load_settings
from evalward._server.tokens import hash_token
from evalward._server.tokens import new_token as make_token
from evalward.errors import UsageError


@click.command("serve")
@click.option("--host", default=None, help="Address to listen on [env: EVALWARD_HOST; default 127.0.0.1]")
@click.option("--port", type=int, default=None, help="Port to listen on [env: EVALWARD_PORT; default 8080]")
@click.option("--db", "db", default=None, metavar="URL", help="History database and job queue [env: EVALWARD_DB]")
@click.option(
    "--role",
    type=click.Choice(["web", "worker", "all"]),
    default=None,
    help="web: HTTP only; worker: jobs only; all: both [env: EVALWARD_ROLE; default all]",
)
@click.option(
    "--workers", type=int, default=None, help="Worker threads in this process [env: EVALWARD_WORKERS; default 1]"
)
@click.option(
    "--server-config",
    type=click.Path(dir_okay=False, exists=True),
    envvar="EVALWARD_SERVER_CONFIG",
    help="TOML file with a [server] table [env: EVALWARD_SERVER_CONFIG]",
)
@click.option(
    "--redeliver/--no-redeliver",
    default=None,
    help="At start-up, ask GitHub to resend the App's failed webhook deliveries of the last 3 days that never "
    "reached this database [env: EVALWARD_REDELIVER_ON_START; default on]",
)
@click.option("--new-token", is_flag=True, help="Print a new upload/read token and the hash to configure, then exit")
def serve_command(
    host: str | None,
    port: int | None,
    db: str | None,
    role: str | None,
    workers: int | None,
    server_config: str | None,
    redeliver: bool | None,
    new_token: bool,
) -> None:
    """Run the evalward GitHub App: webhooks at /webhooks/github, API at /api/v1, dashboard at /.

    Secrets come from the environment (never flags, which other users can see): EVALWARD_WEBHOOK_SECRET,
    EVALWARD_GITHUB_APP_ID, EVALWARD_GITHUB_PRIVATE_KEY or EVALWARD_GITHUB_PRIVATE_KEY_FILE. Every other
    setting has an EVALWARD_<NAME> variable and a key in the [server] table of --server-config.
    SIGTERM stops gracefully: running jobs finish within shutdown_grace_s, or are released for another worker.
    """
    if new_token:
        token = make_token()
        click.echo(f"token: {token}\nhash:  {hash_token(token)}\nGive the token to its user; configure only the hash.")
        return
    require_server_extra()

    settings = load_settings(
        flags={"host": host, "port": port, "db": db, "role": role, "workers": workers, "redeliver_on_start": redeliver},
        config_path=server_config,
    )
    run_server(settings)


def require_server_extra() -> None:
    """The daemon's web stack is an optional extra: say how to install it instead of a traceback."""
    import importlib.util

    # cryptography: pyjwt[crypto], for the GitHub App's RS256 tokens.
    needed = ("starlette", "uvicorn", "jwt", "cryptography")
    missing = [name for name in needed if importlib.util.find_spec(name) is None]
    if missing:
        raise UsageError(
            f"evalward serve needs the server extra ({', '.join(missing)} not installed): "
            "pip install 'evalward[server]'"
        )


def run_server(settings: Any) -> None:
    """Open (and migrate) the database, then serve HTTP and/or run workers until SIGTERM/SIGINT."""

    configure_logging(fmt=settings.log_format, level=settings.log_level)
    for secret in settings.webhook_secrets:
        REDACTOR.add(secret.get_secret_value())
    store = build_store(settings)
    try:
        if settings.role == "worker":
            pool = build_pool(settings, store)
            stop = threading.Event()
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: stop.set())
            pool.start()
            stop.wait()
            pool.stop(settings.shutdown_grace_s)
            return
        import uvicorn

        factory = (lambda state: build_pool(settings, store, metrics=state.metrics)) if settings.role == "all" else None
        app = create_app(settings, store, pool_factory=factory)
        # Header deadline and size, connection cap, keep-alive and concurrency limits: see listen.py.
        config = uvicorn_config(app, settings)
        # Listen before the app starts: connections made during start-up (webhooks GitHub resends at our
        # start-up redelivery request) wait in the backlog instead of being refused.
        sock = listening_socket(settings.host, settings.port, backlog=config.backlog)
        # uvicorn re-raises the signal it caught once it has shut down; with this handler in place a
        # SIGTERM ends the process with exit code 0 after the graceful shutdown instead of killing it.
        signal.signal(signal.SIGTERM, lambda *_: None)
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        store.close()
