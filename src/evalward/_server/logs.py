"""Structured logs for the daemon: one JSON object per line on stderr, secrets masked.

Fields: `ts` (UTC ISO 8601), `level`, `logger`, `msg`, plus whatever was passed in `extra=` (job id,
repo, delivery, …). `RedactSecrets` replaces every secret (the environment's, webhook secrets, the App key,
installation tokens as they are minted) with a marker in the message and extra fields, as a last line of
defence: the code never logs a token on purpose.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

from evalward.redact import redact, register_secret

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}


class RedactSecrets(logging.Filter):
    """Masks secrets in log records: the process-wide redactor (`evalward.redact`), which also knows the
    values registered here (webhook secrets, the App key, installation tokens as they are minted)."""

    def add(self, secret: str | None) -> None:
        register_secret(secret, "daemon secret")

    def mask(self, text: str) -> str:
        return redact(text)

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
