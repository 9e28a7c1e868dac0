"""Secrets never leave evalward: one redactor for every place text goes out.

An agent under test can echo whatever it can see: the job's `GITHUB_TOKEN`, a judge's API key, a
database password. evalward itself handles such values too (App installation tokens, a URL with
credentials). Every way text leaves the process passes through `redact` (or `redact_data` for JSON-like
data): the escapes every renderer uses (`report.escape`), the JSON/HTML/JUnit/markdown files, the GitHub
client's request bodies, the workflow-command files, the history database's rows and the CLI's error
lines. Agent results are also redacted once, as they are recorded, so everything derived from them is
clean before any escaping could split a secret.

What is removed, each replaced by a marker naming it (`[redacted OPENAI_API_KEY]`):
- the values of the environment's secrets: every variable whose name ends in `TOKEN`, `KEY`, `SECRET`,
  `PASSWORD` (and `PASSWD`, `PASSPHRASE`, `CREDENTIALS`), values of at least 8 characters; passwords in
  URLs held by any variable (`postgresql://u:pw@h/db`, `?password=pw`);
- values registered at run time (`register_secret`): tokens evalward mints, values it masks with
  `::add-mask::`;
- well-known token shapes, wherever they come from: GitHub tokens (`ghp_`, `gho_`, `ghu_`, `ghs_`,
  `ghr_`, `github_pat_`), `sk-…` API keys, JWTs, AWS access key ids, PEM private keys, Slack tokens,
  `Bearer …` / `Authorization: token …` credentials;
- credentials in URLs (`scheme://user:password@host`, secret-named query parameters).
"""

from __future__ import annotations

import os
import re
import shlex
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import BaseModel

MIN_SECRET_LENGTH = 8
"""Shorter environment values are not treated as secrets: masking `1` or `true` would shred every report."""

_SECRET_NAME = re.compile(r"(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?)$")
_SECRET_PARAMETER = re.compile(r"token|key|secret|passw|pwd|auth|sig|credential", re.IGNORECASE)
_PLAIN_VALUES = frozenset({"true", "false", "none", "null", "undefined", "changeme"})

# (what it is, the pattern, literals one of which any match contains): the literal check is a fast
# substring search, so the regexes (slow to scan: they start with \b) run only on text that may match.
_TOKEN_SHAPES: tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...] = (
    (
        "PEM private key",
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.S),
        ("PRIVATE KEY-----",),
    ),
    ("GitHub token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,251}"), ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    ("GitHub token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{30,251}"), ("github_pat_",)),
    ("API key", re.compile(r"\bsk-(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}"), ("sk-",)),
    ("JWT", re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"), ("eyJ",)),
    ("AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), ("AKIA", "ASIA")),
    ("Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), ("xox",)),
)
# The credential after an authorization scheme keeps the scheme word, so the text still reads. Outside an
# `Authorization` header only `Bearer` counts, and only before something token-like (long, with a digit),
# so prose such as "the bearer instrument" is left alone.
_AUTH_SCHEME = re.compile(
    r"(?i)\b(authorization\s*[:=]\s*(?:bearer|token|basic)\s+|bearer\s+(?=[A-Za-z0-9._~+/-]*\d))"
    r"([A-Za-z0-9._~+/-]{12,}=*)"
)
_URL_PASSWORD = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://[^\s/@:\"'<>]*:)([^\s/@\"'<>]+)@")
_URL_SECRET_PARAMETER = re.compile(
    r"([?&][A-Za-z0-9_.-]*(?:token|key|secret|passw|pwd|credential|signature|sig)[A-Za-z0-9_.-]*=)([^&\s#\"'<>]+)",
    re.IGNORECASE,
)
_ASSIGNED_SECRET = re.compile(r"\b([A-Z][A-Z0-9_]*(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD))=(\S{8,})")
_ASSIGNED_LITERALS = ("TOKEN=", "KEY=", "SECRET=", "PASSWORD=", "PASSWD=")
# Every literal the steps of `Redactor.text` look for (besides `bearer`/`authorization`, checked in lower case),
# in one pattern: most strings (keys, statuses, metric names) contain none, and one search rejects them in
# ~0.3 µs where the per-step checks took ~6 µs (an agent result holds ~300 strings).
_ANY_TRIGGER = re.compile("|".join(re.escape(t) for _, _, ts in _TOKEN_SHAPES for t in ts) + "|://|=")
# For the whole-document check (`Redactor.could_change`): the assignment pattern without its leading `\b`,
# which an escape sequence in JSON text (`\nMY_TOKEN=…`) would hide. Dropping an assertion only adds matches.
_ASSIGNED_SECRET_ANYWHERE = re.compile(r"[A-Z][A-Z0-9_]*(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD)=\S{8,}")
_TOKEN_LITERALS: tuple[str, ...] = tuple(literal for _, _, literals in _TOKEN_SHAPES for literal in literals)


def _literal_finders(literals: Sequence[str]) -> tuple[Callable[[str], object], ...]:
    """Tests for "does the text contain one of `literals`", fewer than one per literal: literals that share
    their first two characters become one pattern with that literal prefix (`gh(?:p_|o_|…)`), which the regex
    engine finds with its fast substring search; a whole document is scanned ~6 times instead of ~12."""
    by_prefix: dict[str, list[str]] = {}
    for literal in literals:
        by_prefix.setdefault(literal[:2], []).append(literal)
    finders: list[Callable[[str], object]] = []
    for prefix, group in by_prefix.items():
        if len(group) == 1:
            finders.append(_contains(group[0]))
        else:
            rest = "|".join(re.escape(literal[2:]) for literal in group)
            finders.append(re.compile(f"{re.escape(prefix)}(?:{rest})").search)
    return tuple(finders)


def _contains(literal: str) -> Callable[[str], bool]:
    return lambda text: literal in text


_TOKEN_LITERAL_FINDERS = _literal_finders(_TOKEN_LITERALS)
# Characters JSON writes as an escape sequence (`"`, `\`, controls): a secret holding one appears in JSON text
# only in pieces, so the document check looks for its longest piece.
_JSON_ESCAPED = re.compile(r'["\\\x00-\x1f]')
_OPTION_WITH_SECRET = re.compile(
    r"^(--?[A-Za-z0-9_-]*(?:key|token|secret|passw|pwd|credential)[A-Za-z0-9_-]*)(=.*)?$", re.I
)


def marker(what: str) -> str:
    """The text that stands where a secret was: says what was removed, never any part of it."""
    return f"[redacted {what}]"


@dataclass(frozen=True)
class Secret:
    """A value that must never be shown, and the name its marker gives (a variable name or a kind)."""

    value: str
    name: str


_Data = TypeVar("_Data")
_Model = TypeVar("_Model", bound=BaseModel)


class Redactor:
    """Replaces known secret values and token shapes in text; immutable once built."""

    def __init__(self, secrets: Iterable[Secret] = ()) -> None:
        names: dict[str, str] = {}
        for secret in secrets:
            for needle in _needles(secret.value):
                names.setdefault(needle, secret.name)
        self._names = names
        self._pieces = {max(_JSON_ESCAPED.split(needle), key=len) for needle in names}
        # Longest first, so a secret that contains another is replaced whole.
        ordered = sorted(names, key=len, reverse=True)
        self._values = re.compile("|".join(re.escape(n) for n in ordered)) if ordered else None

    @property
    def secret_count(self) -> int:
        return len(self._names)

    def text(self, text: str) -> str:
        """`text` with every secret value, token shape and URL credential replaced by its marker."""
        if not text:
            return text
        if self._values is not None and any(needle in text for needle in self._names):
            text = self._values.sub(lambda m: marker(self._names[m.group()]), text)
        if _ANY_TRIGGER.search(text) is None:
            lowered = text.lower()
            if "bearer" not in lowered and "authorization" not in lowered:
                return text
        for name, shape, literals in _TOKEN_SHAPES:
            if any(literal in text for literal in literals):
                text = shape.sub(marker(name), text)
        lowered = text.lower()
        if "bearer" in lowered or "authorization" in lowered:
            text = _AUTH_SCHEME.sub(lambda m: m.group(1) + marker("credential"), text)
        if "://" in text and "@" in text:
            text = _URL_PASSWORD.sub(lambda m: m.group(1) + marker("password") + "@", text)
        if "=" in text:
            text = _URL_SECRET_PARAMETER.sub(lambda m: m.group(1) + marker("credential"), text)
            if any(literal in text for literal in _ASSIGNED_LITERALS):
                text = _ASSIGNED_SECRET.sub(lambda m: f"{m.group(1)}={marker(m.group(1))}", text)
        return text

    def could_change(self, document: str) -> bool:
        """False only when `text` would leave every string of the JSON `document` as it is.

        Each step of `text` is checked once on the whole document, in a form that survives JSON escaping: the
        secret values' longest unescaped pieces, the token shapes' literals, the scheme words, and the URL
        and assignment patterns, which match escaped text as they match the raw string (their character
        classes take `\\`, `u` and digits; the one `\\b` an escape could hide is dropped). A clean document
        — nearly every agent result — is then never walked string by string.
        """
        if any(piece in document for piece in self._pieces):
            return True
        if any(find(document) for find in _TOKEN_LITERAL_FINDERS):
            return True
        lowered = document.lower()
        if "bearer" in lowered or "authorization" in lowered:
            return True
        if "://" in document and "@" in document and _URL_PASSWORD.search(document):
            return True
        if "=" not in document:
            return False
        # Each pattern's literal part first: a regex scan of a few kilobytes costs ~10 µs, a substring test ~1.
        if _url_secret_parameter_in(document):
            return True
        return any(literal in document for literal in _ASSIGNED_LITERALS) and bool(
            _ASSIGNED_SECRET_ANYWHERE.search(document)
        )

    def data(self, data: _Data) -> _Data:
        """JSON-like `data` (dicts, lists, tuples, strings, scalars) with every string redacted.

        Returns the very same object when nothing changed, so callers can skip re-validation cheaply.
        """
        return _walk(self, data)  # type: ignore[no-any-return]

    def model(self, model: _Model) -> _Model:
        """`model` with every string field redacted (the same instance when nothing had to change)."""
        if not self.could_change(model.model_dump_json()):
            return model  # one pass over the JSON text instead of a walk over every string (~300 per result)
        return self._walked(model)

    def encoded_model(self, model: _Model, encode: Callable[[_Model], bytes]) -> tuple[_Model, bytes]:
        """`self.model(model)` and its `encode`d form, for a caller that writes the model out: the JSON the
        check reads is the one written when nothing had to change. `encode` must write every string field
        (fields it leaves out, such as computed ones, must be derived from the others)."""
        data = encode(model)
        if not self.could_change(data.decode("utf-8")):
            return model, data
        redacted = self._walked(model)
        return redacted, data if redacted is model else encode(redacted)

    def model_json(self, model: _Model) -> tuple[_Model, str]:
        """`self.model(model)` and its JSON text (`model_dump_json()`), dumped once when nothing had to
        change: the check reads the very text the caller writes (a stored run's row)."""
        text = model.model_dump_json()
        if not self.could_change(text):
            return model, text
        redacted = self._walked(model)
        return redacted, text if redacted is model else redacted.model_dump_json()

    def _walked(self, model: _Model) -> _Model:
        dumped = model.model_dump(mode="json")
        cleaned = self.data(dumped)
        if cleaned is dumped:
            return model
        return type(model).model_validate(cleaned)


def _url_secret_parameter_in(document: str) -> bool:
    """`_URL_SECRET_PARAMETER.search(document)`, tried only where a match can start (at a `?` or `&`): a
    search scans every character (~25 µs for a 5 KB result), the few starts cost well under one."""
    for start in ("?", "&"):
        position = document.find(start)
        while position != -1:
            if _URL_SECRET_PARAMETER.match(document, position):
                return True
            position = document.find(start, position + 1)
    return False


def _walk(redactor: Redactor, node: Any) -> Any:
    # Scalars and plain dicts are tested before the `Mapping` ABC, whose isinstance check is slow.
    if isinstance(node, str):
        return redactor.text(node)
    if node is None or isinstance(node, (int, float)):
        return node
    if isinstance(node, (dict, Mapping)):
        changed = False
        items: list[tuple[Any, Any]] = []
        for key, value in node.items():
            new_key, new_value = _walk(redactor, key), _walk(redactor, value)
            changed = changed or new_key is not key or new_value is not value
            items.append((new_key, new_value))
        return dict(items) if changed else node
    if isinstance(node, (list, tuple)):
        walked = [_walk(redactor, item) for item in node]
        if all(w is o for w, o in zip(walked, node, strict=True)):
            return node
        return type(node)(walked) if isinstance(node, tuple) else walked
    return node


def _needles(value: str) -> list[str]:
    """The strings to search for: the value, and each line of a multi-line value (logs re-wrap them)."""
    value = value.strip()
    if len(value) < MIN_SECRET_LENGTH or value.lower() in _PLAIN_VALUES:
        return []
    needles = [value]
    if "\n" in value:
        needles.extend(line.strip() for line in value.splitlines() if len(line.strip()) >= MIN_SECRET_LENGTH)
    return needles


def is_secret_name(name: str) -> bool:
    """True for an environment variable whose value is a secret by its name (`…_TOKEN`, `…_KEY`, …).

    Actions inputs arrive as `INPUT_<NAME>` with the input's own spelling (`INPUT_GITHUB-TOKEN`), so `-`
    counts as `_`.
    """
    return _SECRET_NAME.search(name.upper().replace("-", "_")) is not None


def secrets_from_environment(environ: Mapping[str, str]) -> list[Secret]:
    """The secrets an environment holds: secret-named variables, and passwords inside any URL value."""
    found: list[Secret] = []
    for name, value in environ.items():
        if is_secret_name(name):
            found.append(Secret(value, name))
        if "://" in value or "password=" in value.lower():
            found.extend(Secret(password, f"{name} password") for password in _url_passwords(value))
    return found


def _url_passwords(value: str) -> list[str]:
    passwords: list[str] = []
    try:
        parts = urlsplit(value.strip())
        if parts.password:
            passwords.append(parts.password)
        passwords.extend(v for k, v in parse_qsl(parts.query) if _SECRET_PARAMETER.search(k))
    except ValueError:
        return []
    return passwords


# -- the process-wide redactor ----------------------------------------------------------------------

_lock = threading.Lock()
_registered: dict[str, str] = {}
_current: Redactor | None = None


def register_secret(value: str | None, name: str = "secret") -> None:
    """Add a value found at run time (a minted token, a value masked with `::add-mask::`)."""
    global _current
    if not value or not _needles(value):
        return
    with _lock:
        if value not in _registered:
            _registered[value] = name
            _current = None


def register_environment(environ: Mapping[str, str]) -> list[Secret]:
    """Add the secrets of an environment other than the process's own (the one `evalward ci` was given);
    returns them."""
    found = secrets_from_environment(environ)
    for secret in found:
        register_secret(secret.value, secret.name)
    return found


def refresh_from_environment() -> None:
    """Forget the cached redactor, so the next use reads the environment again (call at every entry point)."""
    global _current
    with _lock:
        _current = None


def current() -> Redactor:
    """The process's redactor: the environment's secrets (read once per entry point) and registered values."""
    global _current
    redactor = _current
    if redactor is not None:
        return redactor
    with _lock:
        if _current is None:
            registered = [Secret(v, n) for v, n in _registered.items()]
            _current = Redactor([*secrets_from_environment(os.environ), *registered])
        return _current


def redact(text: str) -> str:
    """`text` as it may leave evalward (see the module docstring for what is removed)."""
    return current().text(text)


def redact_data(data: _Data) -> _Data:
    """JSON-like data as it may leave evalward (the same object when nothing changed)."""
    return current().data(data)


def redact_model(model: _Model) -> _Model:
    """A pydantic model as it may leave evalward (the same instance when nothing changed)."""
    return current().model(model)


def redact_encoded_model(model: _Model, encode: Callable[[_Model], bytes]) -> tuple[_Model, bytes]:
    """`redact_model(model)` and its `encode`d form (`Redactor.encoded_model`)."""
    return current().encoded_model(model, encode)


def redact_model_json(model: _Model) -> tuple[_Model, str]:
    """`redact_model(model)` and its JSON text (`Redactor.model_json`)."""
    return current().model_json(model)


# -- credentials shown in configuration ---------------------------------------------------------------


def mask_url(url: str) -> str:
    """`url` with its password (or its whole userinfo when it is a bare token) and secret-named query
    parameter values replaced by markers; anything that is not a URL comes back redacted as text."""
    try:
        parts = urlsplit(url)
        host_part = parts.netloc.rpartition("@")
        if host_part[1]:
            user, _, password = host_part[0].partition(":")
            userinfo = f"{user}:{marker('password')}" if password else marker("credential")
            netloc = f"{userinfo}@{host_part[2]}"
        else:
            netloc = parts.netloc
        query = urlencode(
            [
                (k, marker("credential") if _SECRET_PARAMETER.search(k) else v)
                for k, v in parse_qsl(parts.query, keep_blank_values=True)
            ],
            safe="[] ",
        )
        return redact(urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment)))
    except ValueError:
        return redact(url)


def url_without_credentials(url: str) -> str:
    """`url` as a link or a target to show: userinfo dropped (it is sent as auth, never shown), secret-named
    query parameter values masked."""
    try:
        parts = urlsplit(url)
        bare = urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, parts.query, parts.fragment))
    except ValueError:
        return redact(url)
    return mask_url(bare)


def mask_command(argv: Sequence[str]) -> list[str]:
    """A command line as it may be shown: the value after (or in) a secret-named option is masked,
    as are `NAME_KEY=value` assignments, URL credentials and known token shapes."""
    shown: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            shown.append(marker("credential"))
            hide_next = False
            continue
        option = _OPTION_WITH_SECRET.match(arg)
        if option and option.group(2):
            shown.append(f"{option.group(1)}={marker('credential')}")
            continue
        hide_next = option is not None
        shown.append(mask_url(arg) if "://" in arg else redact(arg))
    return shown


def mask_command_text(command: str) -> str:
    """`mask_command` for a command line held as one string (shell-quoted words)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return redact(command)
    masked = mask_command(words)
    return command if masked == words else shlex.join(masked)
