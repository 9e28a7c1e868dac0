"""Secrets never leave evalward: one redactor for every place text goes out.

An agent under test can echo whatever it can see: the job's `GITHUB_TOKEN`, a judge's API key, a
database password. evalward itself handles such values too (App installation tokens, a URL with
credentials). Every way text leaves the process passes through `redact` (or `redact_data` for JSON-like
data): the escapes every renderer uses (`report.escape`), the JSON/HTML/JUnit/markdown files, the GitHub
client's request bodies, the workflow-command files, the history database's rows and the CLI's error
lines. Agent results are also redacted once, as they are recorded, so everything derived from them is
clean before any escaping could split a secret.

What is removed, each replaced by a marker naming it (`[redacted OPENAI_API_KEY]`):
- the values of the environment's secrets (`secrets_from_environment`): every variable whose name says it holds
  one (`evalward.secret_names`: `…TOKEN`, `…_KEY`, `DB_PASS`…, not `…_KEY_FILE`); where the secret word is not
  the last part (`SESSION_BACKEND`), plain lower-case words (`database`) are settings, not secrets. And every
  variable named by `EVALWARD_SECRET_NAMES` or `secret_names` in evalward.toml; passwords in URLs held by any
  variable (`postgresql://u:pw@h/db`, `?password=pw`);
- values registered at run time (`register_secret`): tokens evalward mints, values it masks with
  `::add-mask::`;
- well-known token shapes, wherever they come from: GitHub tokens (`ghp_`, `gho_`, `ghu_`, `ghs_`,
  `ghr_`, `github_pat_`), `sk-…` API keys, JWTs, AWS access key ids, PEM private keys, Slack tokens,
  `Bearer …` / `Authorization: token …` credentials;
- credentials in URLs (`scheme://user:password@host`, secret-named query parameters) and `NAME=value`
  assignments to a secret name.

A secret value is found in every spelling an agent could give it (`evalward.secret_spellings`: reversed, hex,
base64, URL-encoded, split by spaces, pieces of 16 characters or more…). Short or plain values are not secrets.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import BaseModel

from evalward.secret_names import SECRET_NAMES_VARIABLE as SECRET_NAMES_VARIABLE
from evalward.secret_names import STRONG, WEAK, name_strength, set_configured_names
from evalward.secret_names import is_secret_name as is_secret_name
from evalward.secret_names import secret_name_patterns as secret_name_patterns
from evalward.secret_spellings import MIN_DISTINCT_CHARACTERS as MIN_DISTINCT_CHARACTERS
from evalward.secret_spellings import MIN_FRAGMENT_LENGTH as MIN_FRAGMENT_LENGTH
from evalward.secret_spellings import MIN_SECRET_LENGTH as MIN_SECRET_LENGTH
from evalward.secret_spellings import Spellings, document_bytes, hideable, plain_bytes
from evalward.secret_spellings import marker as marker

_SECRET_PARAMETER = re.compile(r"token|key|secret|passw|pwd|auth|sig|credential", re.IGNORECASE)

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
# `NAME=value` with a secret NAME (`is_secret_name`) and a value of 8 or more non-space characters.
_ASSIGNED_NAME = re.compile(r"\b([A-Z][A-Z0-9_]*)=")
_ASSIGNED_VALUE = re.compile(r"\S{8,}")
_NAME_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
# Every literal the steps of `Redactor.text` look for (besides `bearer`/`authorization`, checked in lower case),
# in one pattern: most strings (keys, statuses, metric names) contain none, and one search rejects them in
# ~0.3 µs where the per-step checks took ~6 µs (an agent result holds ~300 strings).
_ANY_TRIGGER = re.compile("|".join(re.escape(t) for _, _, ts in _TOKEN_SHAPES for t in ts) + "|://|=")
_TOKEN_LITERALS: tuple[str, ...] = tuple(literal for _, _, literals in _TOKEN_SHAPES for literal in literals)


def _literal_finders(literals: Sequence[str]) -> tuple[Callable[[str], object], ...]:
    """Tests for "does the text contain one of `literals`", fewer than one per literal: literals that share
    their first two characters become one pattern with that literal prefix (`gh(?:p_|o_|…)`), which the regex
    engine finds with its fast substring search; a whole document is scanned ~6 times instead of ~12.

    A group whose literals all hold an upper-case letter (`eyJ`, `AKIA`) is first tested for the rarest such
    letter alone: a one-character search is a `memchr`, ~20 times faster than a search for the literal, and
    agent results and prose seldom hold a `J` or a `K` at all."""
    by_prefix: dict[str, list[str]] = {}
    for literal in literals:
        by_prefix.setdefault(literal[:2], []).append(literal)
    finders: list[Callable[[str], object]] = []
    for prefix, group in by_prefix.items():
        if len(group) == 1:
            finder: Callable[[str], object] = _contains(group[0])
        else:
            rest = "|".join(re.escape(literal[2:]) for literal in group)
            finder = re.compile(f"{re.escape(prefix)}(?:{rest})").search
        shared = set.intersection(*(set(literal) for literal in group)) & set(_RARE_FIRST)
        finders.append(_after(min(shared, key=_RARE_FIRST.index), finder) if shared else finder)
    return tuple(finders)


# Upper-case letters, rarest first in English text and JSON (by letter frequency).
_RARE_FIRST = "ZQJXKVBPYGFWMUCLDRHSNIOATE"


def _after(letter: str, finder: Callable[[str], object]) -> Callable[[str], object]:
    return lambda text: letter in text and finder(text)


def _contains(literal: str) -> Callable[[str], bool]:
    return lambda text: literal in text


_TOKEN_LITERAL_FINDERS = _literal_finders(_TOKEN_LITERALS)
_OPTION_WITH_SECRET = re.compile(
    r"^(--?[A-Za-z0-9_-]*(?:key|token|secret|passw|pwd|credential)[A-Za-z0-9_-]*)(=.*)?$", re.I
)


@dataclass(frozen=True)
class Secret:
    """A value that must never be shown, and the name its marker gives (a variable name or a kind)."""

    value: str
    name: str


_Data = TypeVar("_Data")
_Model = TypeVar("_Model", bound=BaseModel)


class Redactor:
    """Replaces known secret values (in every spelling), token shapes and credentials in text; immutable once
    built."""

    def __init__(self, secrets: Iterable[Secret] = ()) -> None:
        values: dict[str, str] = {}
        for secret in secrets:
            value = hideable(secret.value)
            if value is not None:
                values.setdefault(value, secret.name)
        self._secret_names = frozenset(values.values())
        self._spellings = Spellings(values) if values else None

    @property
    def secret_count(self) -> int:
        """How many secret values this redactor masks (each in all its spellings)."""
        return self._spellings.value_count if self._spellings is not None else 0

    def text(self, text: str) -> str:
        """`text` with every secret value (in any spelling), token shape and credential replaced by its marker."""
        if not text:
            return text
        spellings = self._spellings
        if spellings is not None and len(text) >= spellings.shortest and spellings.may_hold(plain_bytes(text)):
            text = spellings.mask(text)
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
            if _assignment_in(text):
                text = _mask_assignments(text)
        return text

    def found(self, text: str) -> list[str]:
        """What `self.text` would remove from `text`, each said without any part of it: "the value of MY_TOKEN",
        "a GitHub token", "the password in DB_URL"; empty when `text` leaves it as it is."""
        redacted = self.text(text)
        if redacted == text:
            return []
        before = _MARKER.findall(text)
        described: list[str] = []
        for name in _MARKER.findall(redacted):
            if name in before:
                before.remove(name)  # a marker the text already held
            elif (description := self._describe(name)) not in described:
                described.append(description)
        return described or ["a secret"]

    def _describe(self, name: str) -> str:
        if name in self._secret_names:
            if name.endswith(" password"):
                return f"the password in {name.removesuffix(' password')}"
            return f"the value of {name}"
        return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"

    def could_change(self, document: str) -> bool:
        """False only when `text` would leave every string of the JSON `document` as it is.

        Each step of `text` is checked once on the whole document, in a form that survives JSON escaping: the
        secret values' spellings (`Spellings.may_hold`, on the document with its spaces and `\\n`, `\\t`, `\\r`
        escapes left out, as `text` leaves them out of each string), the token shapes' literals, the scheme
        words, the URL patterns, which match escaped text as they match the raw string (their character classes
        take `\\`, `u` and digits), and the assignments, found at each `=` by the name before it. A clean document
        — nearly every agent result — is then never walked string by string.
        """
        if self._spellings is not None and self._spellings.may_hold(document_bytes(document)):
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
        return _url_secret_parameter_in(document) or _assignment_in(document)

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


def _assignment_in(text: str) -> bool:
    """True when `text` may assign a value of 8+ non-space characters to a secret name (`NAME=value`, as
    `_mask_assignments` masks): checked at each `=` by the name before it, which is cheaper than a regex scan.
    Digits leading that name are left out: in JSON text they may end an escape (`\\u0001MY_TOKEN=…`)."""
    position = text.find("=", 1)
    while position != -1:
        if text[position - 1] in _NAME_CHARACTERS:  # most `=` follow a lower-case word (`order_id=7`): no name
            start = position - 1
            while start > 0 and text[start - 1] in _NAME_CHARACTERS:
                start -= 1
            name = text[start:position].lstrip("0123456789")
            if name and _assigned_secret(name) and _ASSIGNED_VALUE.match(text, position + 1):
                return True
        position = text.find("=", position + 1)
    return False


def _mask_assignments(text: str) -> str:
    """`text` with the value of every `NAME=value` whose NAME is a secret's (`is_secret_name`) masked; the
    value runs to the next space and has 8 characters or more. Each `NAME=` is tried, even one inside another
    assignment's value (`A=B_TOKEN=…`)."""
    pieces: list[str] = []
    done = 0
    for found in _ASSIGNED_NAME.finditer(text):
        if found.start() < done or not _assigned_secret(found.group(1)):
            continue
        value = _ASSIGNED_VALUE.match(text, found.end())
        if value is None:
            continue
        pieces += [text[done : found.end()], marker(found.group(1))]
        done = value.end()
    return "".join([*pieces, text[done:]]) if pieces else text


@functools.lru_cache(maxsize=4096)
def _assigned_secret(name: str) -> bool:
    """`is_secret_name(name)`, remembered: the same few names (`P=`, `R=` in metric explanations) come back in
    every document. Forgotten when the settings name more secrets (`configure_secret_names`)."""
    return is_secret_name(name)


_MARKER = re.compile(r"\[redacted ([^\]]*)\]")

# -- which variables hold secrets -------------------------------------------------------------------------


def configure_secret_names(names: Iterable[str]) -> None:
    """More names of secret variables, from evalward.toml (`secret_names`): globs (`MYCORP_*`), matched without
    regard to case, added to `EVALWARD_SECRET_NAMES` and the built-in rule (`is_secret_name`). Takes effect at
    the next use of the process's redactor."""
    global _current
    with _lock:
        set_configured_names(names)
        _current = None
        _assigned_secret.cache_clear()


# A setting rather than a secret, in a weakly secret-named variable: lower-case words (`database`, `redis`,
# `mean_over_runs`). Secrets mix cases, digits or symbols.
_PLAIN_WORDS = re.compile(r"[a-z]+(?:[._-][a-z]+)*")


def secrets_from_environment(environ: Mapping[str, str]) -> list[Secret]:
    """The secrets an environment holds: the values of secret-named variables (`name_strength`, with the globs
    of its own `EVALWARD_SECRET_NAMES`; a weakly named one's plain lower-case words are left out), and
    passwords inside any URL value."""
    extra = secret_name_patterns(environ.get(SECRET_NAMES_VARIABLE))
    found: list[Secret] = []
    for name, value in environ.items():
        strength = name_strength(name, extra)
        if strength == STRONG or (strength == WEAK and not _PLAIN_WORDS.fullmatch(value.strip())):
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
    if not value or hideable(value) is None:
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


def secrets_in(text: str) -> list[str]:
    """What `redact` would remove from `text`, each said without any part of it ("the value of MY_TOKEN",
    "a GitHub token"): empty when `text` may leave evalward as it is. For identifiers, which must not change."""
    return current().found(text)


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
