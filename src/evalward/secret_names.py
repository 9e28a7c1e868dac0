"""Which variables hold secrets, by their names: `is_secret_name` and the word lists behind it.

A variable is a secret (`name_strength`) when `TOKEN`, `SECRET`, `PASSWORD`, `PWD`, `KEY`, `AUTH`, `CREDENTIAL`,
`COOKIE`, `SESSION`, `PRIVATE` (or `PASSWD`, `PASSPHRASE`, `AUTHORIZATION`, `PAT`) is one of the `_`-separated parts
of its name, plural or numbered (`API_KEYS`, `OPENAI_API_KEY_2`, `TOKEN2`), or closes a part (`GHTOKEN`, `APIKEY`),
or `PASS` is its last part (`DB_PASS`), unless the name points at a secret without holding it (`…_ENV`, `…_FILE`,
`…_URL`…); and when it matches a glob of `EVALWARD_SECRET_NAMES` or of `secret_names` in evalward.toml
(`evalward.redact.configure_secret_names`, which also forgets the redactor built with the old globs).
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterable, Sequence

SECRET_NAMES_VARIABLE = "EVALWARD_SECRET_NAMES"
"""More names of secret variables (globs, `,` or space separated), besides the ones `is_secret_name` knows."""

# A variable is a secret when one `_`-separated part of its name is one of these words (plural or numbered), or
# `PASS` as the last part (`name_strength`).
_SECRET_WORDS = frozenset(
    {
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "PWD",
        "KEY",
        "AUTH",
        "AUTHORIZATION",
        "CREDENTIAL",
        "COOKIE",
        "SESSION",
        "PRIVATE",
        "PAT",
    }
)
# ... or ends in one of these (`GHTOKEN`, `DBPASSWORD`, `OPENAIAPIKEY`): long enough that no ordinary word ends
# so. The short words and `SESSION` count only as whole parts: `MONKEY`, `BYPASS`, `OAUTH`, `POSSESSION` do not.
_SECRET_ENDINGS = (
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "COOKIE",
    "APIKEY",
    "ACCESSKEY",
    "SECRETKEY",
    "PRIVATEKEY",
    "SIGNINGKEY",
)
# A name whose last part is one of these points at a secret without holding one: `JUDGE_API_KEY_ENV` holds the
# name `OPENAI_API_KEY`, `PRIVATE_KEY_FILE` a path. (`_ID` is not one: `CLIENT_SECRET_ID` holds a secret.)
_POINTER_PARTS = frozenset({"ENV", "VAR", "VARIABLE", "NAME", "FILE", "PATH", "DIR", "URL", "URI"})
# The shell's working directories (`PWD` is a secret word: `DB_PWD`), and evalward's own setting naming the key
# of an agent's answer in a LangGraph state (`messages`).
_NOT_SECRET_NAMES = frozenset({"PWD", "OLDPWD", "EVALWARD_LANGGRAPH_RESPONSE_KEY"})

_configured_names: tuple[str, ...] = ()


def set_configured_names(names: Iterable[str]) -> None:
    """The globs of `secret_names` in evalward.toml, as `name_strength` reads them from now on. Called by
    `evalward.redact.configure_secret_names`, which also drops what was worked out with the old ones: use that."""
    global _configured_names
    _configured_names = tuple(name.strip() for name in names if name.strip())


def secret_name_patterns(text: str | None) -> list[str]:
    """The globs of an `EVALWARD_SECRET_NAMES` value: separated by commas or spaces."""
    return [pattern for pattern in re.split(r"[\s,]+", text or "") if pattern]


def is_secret_name(name: str, extra: Sequence[str] = ()) -> bool:
    """True for a variable whose value is a secret by its name (`name_strength`: weakly or strongly)."""
    return name_strength(name, extra) > NOT_SECRET


NOT_SECRET, WEAK, STRONG = 0, 1, 2


def name_strength(name: str, extra: Sequence[str] = ()) -> int:
    """How surely the variable `name` holds a secret: `STRONG`, `WEAK` or `NOT_SECRET`.

    The name is read in upper case with `-` and `.` as `_` (Actions inputs arrive as `INPUT_GITHUB-TOKEN`) and
    split into its `_`-separated parts, each read without a number or a plural `S`/`ES` after it (`KEYS`,
    `TOKEN2`). A part is a secret word when it is one of `TOKEN`, `SECRET`, `PASSWORD`, `PASSWD`, `PASSPHRASE`,
    `PWD`, `KEY`, `AUTH`, `AUTHORIZATION`, `CREDENTIAL`, `COOKIE`, `SESSION`, `PRIVATE`, `PAT`, or ends in a
    long one (`GHTOKEN`, `DBPASSWORD`, `OPENAIAPIKEY`): `KEYBOARD_LAYOUT`, `PASSAGE`, `TOKENIZER`, `MONKEY`,
    `OAUTH` and `POSSESSION` hold none. `PASS` counts only as the last part (`DB_PASS`; `PASS_RULE` is a rule).

    Strong: the last part — numbers and versions after it left out (`API_KEY_2`, `SECRET_V2`) — is a secret word,
    or the name matches a glob of `extra`, `secret_names` in evalward.toml or `EVALWARD_SECRET_NAMES`. Weak: a
    secret word elsewhere (`SESSION_ID`, `AUTH_HEADER`, `PRIVATE_KEY_PEM`): such a variable may hold a setting
    (`SESSION_BACKEND=database`), so `secrets_from_environment` skips its plain lower-case words. Not a secret: a
    name whose last part points at a secret without holding it (`…_ENV`, `…_NAME`, `…_FILE`, `…_PATH`, `…_DIR`,
    `…_URL`, `…_VAR`: `JUDGE_API_KEY_ENV` holds `OPENAI_API_KEY`), and the shell's `PWD` and `OLDPWD`.
    """
    upper = name.upper().replace("-", "_").replace(".", "_")
    patterns = (*extra, *_configured_names)
    if patterns and any(fnmatch.fnmatchcase(upper, pattern.upper()) for pattern in patterns):
        return STRONG
    return _strength_by_rule(upper)


@functools.lru_cache(maxsize=4096)
def _strength_by_rule(upper: str) -> int:
    """`name_strength`'s built-in rule, for a name already in upper case with `_` separators."""
    parts = [_word_of(part) for part in upper.split("_") if part]
    while len(parts) > 1 and _VERSION.fullmatch(parts[-1]):
        parts.pop()  # `SECRET_V2`, `KEY_2`: the last part is the one before
    if not parts or upper in _NOT_SECRET_NAMES or (len(parts) > 1 and parts[-1] in _POINTER_PARTS):
        return NOT_SECRET
    if _is_secret_word(parts[-1]) or parts[-1] == "PASS":
        return STRONG
    return WEAK if any(_is_secret_word(part) for part in parts[:-1]) else NOT_SECRET


_VERSION = re.compile(r"V?\d*")


def _word_of(part: str) -> str:
    """`part` without a number after it, nor a plural `S`/`ES` when the rest is a secret word or a pointer."""
    word = part.rstrip("0123456789") or part
    for singular in (word.removesuffix("S"), word.removesuffix("ES")):
        if singular != word and (_is_secret_word(singular) or singular in _POINTER_PARTS or singular == "PASS"):
            return singular
    return word


def _is_secret_word(word: str) -> bool:
    return word in _SECRET_WORDS or word.endswith(_SECRET_ENDINGS)
