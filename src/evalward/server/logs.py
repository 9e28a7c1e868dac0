"""Structured logs for the daemon: one JSON object per line on stderr, secrets masked.

Fields: `ts` (UTC ISO 8601), `level`, `logger`, `msg`, plus whatever was passed in `extra=` (job id,
repo, delivery, …). `RedactSecrets` replaces every registered secret (webhook secrets, the App key,
installation tokens as they are minted) with `***` in the message and extra fields, as a last line of
defence: the code never logs a token on purpose.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from datetime import UTC, datetime
from typing import Any

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}
_MIN_SECRET_LEN = 8


class RedactSecrets(logging.Filter):
    """Masks registered secrets in log records (thread-safe registry)."""

    def __init__(self) -> None:
        super().__init__()
        self._secrets: set[str] = set()
        self._lock = threading.Lock()

    def add(self, secret: str | None) -> None:
        if secret and len(secret) >= _MIN_SECRET_LEN:
            with self._lock:
                self._secrets.add(secret)

    def mask(self, text: str) -> str:
        with self._lock:
            secrets = sorted(self._secrets, key=len, reverse=True)
        for secret in secrets:
            if secret in text:
                text = text.replace(secret, "***")
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = self.mask(record.getMessage())
        record.args = None
        for key, value in list(vars(record).items()):
            if key not in _STANDARD and isinstance(value, str):
                setattr(record, key, self.mask(value))
        return True


REDACTOR = RedactSecrets()


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exc"] = REDACTOR.mask(self.formatException(record.exc_info))
        return json.dumps(entry, default=str, ensure_ascii=False)


def configure_logging(*, fmt: str = "json", level: str = "INFO") -> None:
    """Send `evalward.*` and uvicorn logs to stderr as JSON lines (or plain text), through the redactor."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        JsonFormatter() if fmt == "json" else logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s")
    )
    handler.addFilter(REDACTOR)
    for name in ("evalward", "uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.setLevel(level.upper())
        logger.propagate = False
    # Access lines carry request paths only; they stay off unless the level is DEBUG.
    logging.getLogger("uvicorn.access").handlers = [handler] if level.upper() == "DEBUG" else []
    logging.getLogger("uvicorn.access").propagate = False
