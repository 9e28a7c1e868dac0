"""Upload and read tokens: handed to people once, stored only as `sha256:<hex>` of the token.

A presented token is hashed and compared with each stored hash in constant time (`hmac.compare_digest`),
so neither the stored value nor the timing reveals a token. Tokens are random, 32 bytes (256 bits) of
`secrets.token_urlsafe`, so a plain (unsalted) SHA-256 is enough: there is nothing to brute-force.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable, Mapping

TOKEN_PREFIX = "ewt_"
_HASH = re.compile(r"^sha256:[0-9a-f]{64}$")


def new_token() -> str:
    """A fresh token, e.g. `ewt_3q…` (prefix so secret scanners can recognise it)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """`sha256:` + hex SHA-256 of the token's UTF-8 bytes."""
    return "sha256:" + hashlib.sha256(token.encode("utf-8")).hexdigest()


def check_hash(value: str) -> str:
    """A stored hash, validated; raises ValueError (a pydantic field error) for anything else, e.g. a raw token."""
    value = value.strip()
    if not _HASH.match(value):
        raise ValueError("expected a token hash `sha256:<64 hex digits>` (store hashes, never tokens)")
    return value


def token_matches(token: str | None, hashes: Iterable[str]) -> bool:
    """True when `token` hashes to one of `hashes`; every hash is compared (no early exit on a match)."""
    if not token:
        return False
    presented = hash_token(token).encode("ascii")
    matched = False
    for stored in hashes:
        matched |= hmac.compare_digest(presented, stored.encode("ascii"))
    return matched


def repositories_of(token: str | None, upload_token_hashes: Mapping[str, Iterable[str]]) -> frozenset[str]:
    """The repositories `token` may upload to (empty for no token or an unknown one). Every hash of every
    repository is compared, so the time taken does not say which repository, if any, matched. Needs no
    request body: the API answers a wrong token before it reads one."""
    if not token:
        return frozenset()
    presented = hash_token(token).encode("ascii")
    found: set[str] = set()
    for repo, hashes in upload_token_hashes.items():
        matched = False
        for stored in hashes:
            matched |= hmac.compare_digest(presented, stored.encode("ascii"))
        if matched:
            found.add(repo)
    return frozenset(found)


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` (or `token <token>`) header."""
    if not authorization:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() not in ("bearer", "token") or not value.strip():
        return None
    return value.strip()
