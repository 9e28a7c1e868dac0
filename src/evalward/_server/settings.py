"""How `evalward serve` is configured: flags > `EVALWARD_*` variables > the server file > defaults.

The server file is TOML (`--server-config`, `EVALWARD_SERVER_CONFIG`) holding a `[server]` table with
the field names below; unknown keys are rejected with the file and key. It is separate from a
repository's `evalward.toml`, which is read from each checkout by the worker.

```toml
[server]
db = "postgresql+psycopg://evalward@db/evalward"
webhook_secrets = ["current-secret", "previous-secret"]   # several during a rotation
github_app_id = "123456"
github_private_key_file = "/run/secrets/app.pem"
max_jobs_per_repo = 2
public_read = false
read_token_hashes = ["sha256:…"]                          # `evalward serve --new-token` prints one
metrics_token_hashes = ["sha256:…"]                       # /metrics is closed without one (or a read token)
[server.upload_token_hashes]
"octo/agent" = ["sha256:…"]
```

Secrets (webhook secrets, the App key, tokens) are `SecretStr` so they never show in a repr or a log.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator

from evalward._server.tokens import check_hash
from evalward.errors import EvalFileError, FileProblem, UsageError
from evalward.store.engine import resolve_db_url, sqlite_path

Role = Literal["web", "worker", "all"]

MAX_WEBHOOK_BYTES = 25 * 1024 * 1024
"""GitHub sends no payload over 25 MB (docs/github.md §10); a larger body is refused with 413 before reading on."""

MAX_UPLOAD_BYTES = 64 * 1024 * 1024
"""The largest run `POST /api/v1/runs` accepts by default (`max_upload_bytes`)."""

DEFAULT_CLONE_URL = "https://github.com/{repo}.git"

_GITHUB_HOSTS = {"github.com", "api.github.com"}


def check_clone_url(url: str, *, api_url: str, allow_file: bool = False) -> str:
    """`url` when the worker may clone from it: https on github.com or on the host of the configured API
    (GitHub Enterprise Server), or `file://` when `allow_file` (local test repositories). Anything else —
    `ext::`, `ssh://`, `http://`, another host, an option — is refused with ValueError: git would run it."""
    parts = urlsplit(url)
    if parts.scheme == "file" and allow_file and not parts.netloc:
        return url
    api_host = (urlsplit(api_url).hostname or "").lower()
    allowed_hosts = _GITHUB_HOSTS | {api_host}
    if parts.scheme != "https" or (parts.hostname or "").lower() not in allowed_hosts:
        shown = "https://github.com/… or https://" + api_host + "/…"
        hint = "" if parts.scheme != "file" else " (set allow_file_clone_urls for local test repositories)"
        raise ValueError(f"clone URL {url[:120]!r}: expected {shown}{hint}")
    return url


class ServerSettings(BaseModel):
    """Every setting of the daemon. Field names are the `[server]` keys; `EVALWARD_<NAME>` the variables."""

    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    db: str | None = Field(default=None, description="History database URL (also holds the job queue).")
    role: Role = "all"
    workers: int = Field(default=1, ge=0, description="Worker threads in this process (roles worker/all).")
    webhook_secrets: list[SecretStr] = Field(default_factory=list, description="Accepted HMAC secrets.")
    github_app_id: str | None = Field(default=None, description="App ID or client ID (JWT `iss`).")
    github_private_key: SecretStr | None = None
    github_private_key_file: str | None = None
    github_api_url: str = "https://api.github.com"
    clone_url_template: str = Field(
        default=DEFAULT_CLONE_URL,
        description="Where the worker clones from; `{repo}` is owner/name. The token goes in an HTTP header.",
    )
    allow_file_clone_urls: bool = Field(
        default=False,
        description="Let clone_url_template be a file:// URL (tests with local repositories); never in production.",
    )
    base_branches: list[str] = Field(
        default_factory=list, description="Branches whose pushes make baseline runs (besides the default branch)."
    )
    run_label: str = Field(default="evalward:run", description="The label a maintainer adds to run a fork PR.")
    permission_cache_s: float = Field(
        default=60.0, ge=0, description="How long a user's write access to a repository is remembered."
    )
    redeliver_on_start: bool = Field(
        default=True,
        description="Web role with an App: ask GitHub to resend failed deliveries of the last 3 days we never got.",
    )
    redeliver_delay_s: float = Field(
        default=2.0, ge=0, description="Start-up redelivery waits this long after the app has started."
    )
    redeliver_max: int = Field(default=200, ge=0, description="At most this many redelivery requests per start.")
    check_name: str = "evalward"
    max_jobs_per_repo: int = Field(default=2, ge=1)
    max_attempts: int = Field(default=3, ge=1, description="Claims of one job before it fails for good.")
    lease_s: float = Field(
        default=60.0, gt=0, description="A claimed job is retried this long after its last heartbeat."
    )
    heartbeat_s: float = Field(default=10.0, gt=0)
    poll_s: float = Field(default=1.0, gt=0, description="Idle workers look for jobs this often.")
    job_timeout_s: float = Field(default=1800.0, gt=0, description="Wall-clock limit of one eval subprocess.")
    job_memory_mb: int | None = Field(default=4096, ge=64, description="Address-space limit of the eval subprocess.")
    job_cpu_s: int | None = Field(default=None, ge=1, description="CPU-seconds limit of the eval subprocess.")
    work_dir: str = Field(default=".evalward/work", description="Where checkouts are made (removed after each job).")
    sandbox: Literal["bwrap", "unsandboxed"] = Field(
        default="bwrap",
        description="How repository code is isolated: `bwrap` (bubblewrap; a job is refused when it cannot run "
        "here) or `unsandboxed` (as the daemon's own user: the operator accepts that PR code can read its files).",
    )
    sandbox_bwrap: str = Field(default="bwrap", description="The bubblewrap executable (a name on PATH or a path).")
    sandbox_network: bool = Field(
        default=False, description="Give sandboxed repository code the host's network (default: none, not even DNS)."
    )
    sandbox_read_paths: list[str] = Field(
        default_factory=list,
        description="More folders the sandbox shows read-only (a tool outside /usr and the Python environment); "
        "comma-separated in EVALWARD_SANDBOX_READ_PATHS.",
    )
    sweep_s: float = Field(
        default=30.0, gt=0, description="Idle workers close check runs of finished jobs and stale checkouts this often."
    )
    shutdown_grace_s: float = Field(
        default=30.0, ge=0, description="SIGTERM: running jobs get this long, then are released."
    )
    max_webhook_bytes: int = Field(default=MAX_WEBHOOK_BYTES, ge=1)
    max_upload_bytes: int = Field(
        default=MAX_UPLOAD_BYTES, ge=1, description="Largest run `POST /api/v1/runs` reads (413 above)."
    )
    body_timeout_s: float = Field(
        default=60.0, gt=0, description="A request body must arrive within this long of its first read (408 after)."
    )
    header_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="A request's headers must be complete this long after its first byte (a new connection: after "
        "it opened); slower senders get 408 and are disconnected.",
    )
    max_header_bytes: int = Field(
        default=32 * 1024, ge=1024, description="Request line and headers of one request, at most (400/431 above)."
    )
    max_connections: int = Field(
        default=512, ge=1, description="Open connections; one more is answered 503 and closed at once."
    )
    metrics_public: bool = Field(default=False, description="Serve /metrics without a token (closed by default).")
    metrics_token_hashes: list[str] = Field(
        default_factory=list, description="Tokens (hashes) that may read /metrics; read tokens may too."
    )
    public_read: bool = Field(default=False, description="Read endpoints and the dashboard need no token.")
    read_token_hashes: list[str] = Field(default_factory=list)
    upload_token_hashes: dict[str, list[str]] = Field(default_factory=dict, description="owner/repo -> token hashes")
    base_url: str | None = Field(default=None, description="Public URL of this server, for links in check runs.")
    log_format: Literal["json", "text"] = "json"
    log_level: str = "INFO"

    @field_validator("read_token_hashes", "metrics_token_hashes")
    @classmethod
    def _hashes(cls, value: list[str]) -> list[str]:
        return [check_hash(v) for v in value]

    @field_validator("upload_token_hashes")
    @classmethod
    def _upload_hashes(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        return {repo: [check_hash(v) for v in hashes] for repo, hashes in value.items()}

    @field_validator("sandbox_read_paths", mode="before")
    @classmethod
    def _split_paths(cls, value: Any) -> Any:
        """EVALWARD_SANDBOX_READ_PATHS is one comma-separated string."""
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @model_validator(mode="after")
    def _clone_url_is_safe(self) -> ServerSettings:
        check_clone_url(
            self.clone_url_template.format(repo="owner/name"),
            api_url=self.github_api_url,
            allow_file=self.allow_file_clone_urls,
        )
        return self

    def private_key_pem(self) -> str | None:
        """The App's PEM key from the setting or the file it names."""
        if self.github_private_key is not None:
            return self.github_private_key.get_secret_value()
        if self.github_private_key_file:
            try:
                return Path(self.github_private_key_file).read_text(encoding="utf-8")
            except OSError as exc:
                raise UsageError(
                    f"github_private_key_file {self.github_private_key_file!r}: cannot read: {exc.strerror}"
                ) from exc
        return None

    def private_paths(self) -> list[str]:
        """The daemon's own files and folders repository code must never read (the sandbox hides them): the App's
        key file, the database file (with SQLite's journal, WAL and shared-memory files), the server file, the
        daemon's home, the work folder (other jobs' checkouts)."""
        paths: list[str] = []
        if self.github_private_key_file:
            paths.append(self.github_private_key_file)
        database = sqlite_path(resolve_db_url(self.db))
        if database is not None:
            paths += [str(database)] + [f"{database}{suffix}" for suffix in ("-journal", "-wal", "-shm")]
        if os.environ.get("EVALWARD_SERVER_CONFIG"):
            paths.append(os.environ["EVALWARD_SERVER_CONFIG"])
        paths.append(str(Path.home()))
        paths.append(self.work_dir)
        return [str(Path(p).absolute()) for p in paths]

    @property
    def app_configured(self) -> bool:
        return bool(self.github_app_id) and (
            self.github_private_key is not None or self.github_private_key_file is not None
        )


_LIST_FIELDS = {"webhook_secrets", "read_token_hashes", "base_branches", "metrics_token_hashes"}


def env_values(environ: Mapping[str, str]) -> dict[str, Any]:
    """`EVALWARD_<FIELD>` variables present in `environ`. Lists are comma-separated; `upload_token_hashes`
    is `owner/repo=sha256:…,owner/repo=sha256:…`. `EVALWARD_WEBHOOK_SECRET` (singular) is one secret."""
    found: dict[str, Any] = {}
    for name in ServerSettings.model_fields:
        raw = environ.get(f"EVALWARD_{name.upper()}")
        if raw is None or raw == "":
            continue
        if name in _LIST_FIELDS:
            found[name] = [part.strip() for part in raw.split(",") if part.strip()]
        elif name == "upload_token_hashes":
            table: dict[str, list[str]] = {}
            for part in raw.split(","):
                repo, sep, digest = part.strip().partition("=")
                if sep:
                    table.setdefault(repo.strip(), []).append(digest.strip())
            found[name] = table
        else:
            found[name] = raw
    single = environ.get("EVALWARD_WEBHOOK_SECRET")
    if single and "webhook_secrets" not in found:
        found["webhook_secrets"] = [single]
    return found


def file_values(path: str | None) -> dict[str, Any]:
    """The `[server]` table of the server file (empty without a file)."""
    if not path:
        return {}
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise EvalFileError([FileProblem(path=path, message=f"cannot read: {exc.strerror}")]) from exc
    except tomllib.TOMLDecodeError as exc:
        raise EvalFileError([FileProblem(path=path, message=f"invalid TOML: {exc}")]) from exc
    unknown = sorted(set(data) - {"server"})
    if unknown:
        raise EvalFileError(
            [FileProblem(path=path, json_path=key, message="unknown table", expected="[server]") for key in unknown]
        )
    table = data.get("server", {})
    if not isinstance(table, dict):
        raise EvalFileError([FileProblem(path=path, json_path="server", message="expected a table")])
    return table


def load_settings(
    *, flags: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None, config_path: str | None = None
) -> ServerSettings:
    """Merge defaults < file < environment < flags (None flags are "not given") and validate."""
    env = os.environ if environ is None else environ
    path = config_path or env.get("EVALWARD_SERVER_CONFIG") or None
    merged: dict[str, Any] = {}
    merged.update(file_values(path))
    merged.update(env_values(env))
    merged.update({k: v for k, v in (flags or {}).items() if v is not None})
    try:
        return ServerSettings.model_validate(merged)
    except ValidationError as exc:
        problems = [
            FileProblem(
                path=path or "<server settings>",
                json_path=".".join(["server", *(str(p) for p in error["loc"])]),
                message="unknown key" if error["type"] == "extra_forbidden" else error["msg"],
            )
            for error in exc.errors()
        ]
        raise EvalFileError(problems) from exc
