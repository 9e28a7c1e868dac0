"""A secret value in every spelling an agent could give it, and the check of a text or a document for them.

A secret value is found (`spellings_of`) as it is, reversed, in lower or upper case, in hex (either case), in
base64 and base64url (padded or not, and at each of the three alignments it can have inside a longer encoded
stream, so a secret embedded in a larger base64 blob is caught), URL-encoded (reserved characters only, or every
byte), with spaces, tabs or line breaks anywhere inside it, and — for a value longer than 16 characters that does
not name a place (a path, a URL) — any piece of 16 characters or more. Short or plain values are not secrets
(`hideable`: `MIN_SECRET_LENGTH`, `MIN_DISTINCT_CHARACTERS`, numbers, `true`…): masking them would shred every
report. `Spellings` holds a redactor's values: `may_hold` is the cheap byte check run on every string and
record, `mask` the search run on the few that may hold one.
"""

from __future__ import annotations

import base64
import json
import re
import sys
import threading
from collections.abc import Iterable, Mapping
from urllib.parse import quote, quote_plus

MIN_SECRET_LENGTH = 8
"""Shorter values (spaces left out) are not treated as secrets: masking `1` or `true` would shred every report."""
MIN_DISTINCT_CHARACTERS = 5
"""Values with fewer different characters (`aaaaaaaa`, `00000000`) are not secrets either: too plain to mask."""
MIN_FRAGMENT_LENGTH = 16
"""A piece of a secret this long or longer is masked wherever it appears (a truncated echo, `token[:16]`)."""
_PLAIN_VALUES = frozenset({"true", "false", "none", "null", "undefined", "changeme"})
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
# A value that names a place — a URL, or a path (from `/`, `~/`, `./`, `../` or a drive, with two separators at
# least: a base64 secret may start with `/` too) — rather than being a secret's text: pieces of it
# (`/home/runner/work/`) would mask every path in a report, so only the whole value is masked.
_PLACE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://|(?:~|\.\.?|[A-Za-z]:)?[/\\][^/\\]*[/\\]")

# What `Redactor.text` treats as a break inside a secret: a value split by spaces, tabs or line breaks is still
# found. (Other separators — `-`, `.`, non-breaking spaces — are not: they would join unrelated words.)
_SPACE = " \t\n\r"
_URL_SAFE = str.maketrans("+/", "-_")


def marker(what: str) -> str:
    """The text that stands where a secret was: says what was removed, never any part of it."""
    return f"[redacted {what}]"


def _without_space(text: str) -> str:
    """`text` without the characters a secret may be split by (`_SPACE`)."""
    for space in _SPACE:
        text = text.replace(space, "")
    return text


def hideable(value: str) -> str | None:
    """`value` (stripped) when it is worth masking: 8 or more characters besides spaces, 5 or more different
    ones, and not a number or a plain word (`true`, `null`…); else None."""
    stripped = value.strip()
    skeleton = _without_space(stripped)
    if len(skeleton) < MIN_SECRET_LENGTH or len(set(skeleton)) < MIN_DISTINCT_CHARACTERS:
        return None
    if stripped.lower() in _PLAIN_VALUES or _NUMBER.fullmatch(stripped):
        return None
    return stripped


def _names_a_place(value: str) -> bool:
    """True for a path or a URL (`_PLACE`): pieces of it are shared by other places, so only the whole of it is
    masked."""
    return _PLACE.match(value) is not None or "://" in value


def spellings_of(value: str) -> list[str]:
    """Every spelling of the secret `value` (stripped) that `Redactor.text` removes, spaces left out, at least
    `MIN_SECRET_LENGTH` long: the value, each of its lines, the value reversed, in lower and in upper case, its
    UTF-8 bytes in hex (both cases), in base64 and base64url (`_base64_spellings`), URL-encoded (`quote`,
    `quote_plus`, and every byte as `%XX`, with upper- or lower-case digits)."""
    data = value.encode("utf-8", "surrogatepass")
    skeleton = _without_space(value)
    found = [skeleton, skeleton[::-1], skeleton.lower(), skeleton.upper()]
    if "\n" in value or "\r" in value:
        found += [_without_space(line) for line in value.splitlines()]
    found += [data.hex(), data.hex().upper()]
    for spelling in _base64_spellings(data):
        found += [spelling, spelling.translate(_URL_SAFE)]
    for quoted in (quote(value, safe=""), quote_plus(value, safe=""), "".join(f"%{byte:02X}" for byte in data)):
        found += [quoted, re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), quoted)]
    return [s for s in dict.fromkeys(_without_space(s) for s in found) if len(s) >= MIN_SECRET_LENGTH]


def _base64_spellings(data: bytes) -> list[str]:
    """`data` in base64: whole (with and without its `=` padding), and as it appears inside a longer encoded
    stream. Base64 turns each 3 bytes into 4 characters, so inside a stream `data` starts at byte 0, 1 or 2 of a
    group; for each of the three, the characters that depend on `data` alone (those holding bits of a
    neighbour's bytes are left out) appear whatever surrounds it."""
    whole = base64.b64encode(data).decode("ascii")
    found = [whole, whole.rstrip("=")]
    for shift in range(3):
        stream = base64.b64encode(bytes(shift) + data + bytes(2)).decode("ascii")
        first, last = -(-8 * shift // 6), 8 * (shift + len(data)) // 6  # the characters wholly inside `data`
        found.append(stream[first:last])
    return found


def _document_spellings(spelling: str) -> list[bytes]:
    """The bytes `spelling` is searched for in: as plain text (`plain_bytes`) and as a JSON document writes
    it (`document_bytes`: escaped as `json.dumps` and pydantic escape, `\\\\` then written as one NUL)."""
    plain = spelling.encode("utf-8", "surrogatepass")
    escaped = json.dumps(spelling, ensure_ascii=False)[1:-1].encode("utf-8", "surrogatepass")
    return [plain] if escaped == plain else [plain, escaped.replace(b"\\\\", b"\x00")]


def plain_bytes(text: str) -> bytes:
    """`text` as `Spellings.may_hold` reads it: UTF-8, without spaces, tabs and line breaks."""
    data = text.encode("utf-8", "surrogatepass")
    for space in (b" ", b"\n", b"\t", b"\r"):
        data = data.replace(space, b"")
    return data


def document_bytes(document: str) -> bytes:
    """The JSON `document` as `Spellings.may_hold` reads it: UTF-8 without spaces, each escaped backslash
    (`\\\\`) as one NUL byte (which JSON text never holds), and the `\\n`, `\\t`, `\\r` escapes left out — what
    remains of each string is its text without spaces, tabs and line breaks (`plain_bytes`), escaped
    (`_document_spellings`). (Raw tabs and line breaks are not in JSON strings, only between values, where no
    spelling can span them: they stay.) Left to right, every `\\\\` pair is one escaped backslash, so an `n`
    after one is never read as `\\n`."""
    data = document.encode("utf-8", "surrogatepass").replace(b" ", b"")
    if b"\\" in data:
        data = data.replace(b"\\\\", b"\x00")
        for escape in (b"\\n", b"\\t", b"\\r"):
            data = data.replace(escape, b"")
    return data


class Spellings:
    """The spellings of a redactor's secret values (`spellings_of`), ready for the two searches `Redactor.text`
    makes: whether a text may hold one (`may_hold`, on every string and document, so cheap), and where
    (`mask`, only on the few texts that may).

    `may_hold` reads the text's bytes 8 at a time, as integers at offsets 0, 8, 16…, and looks each up in a set of
    8-byte windows of the spellings: wherever a spelling of 15 bytes or more sits, one of those aligned reads
    falls wholly inside it, starting at one of its first 8 bytes — so the set holds the windows at offsets 0 to 7
    of each spelling, and at every offset of a value whose pieces count (a piece sits anywhere in it). Spellings
    of 8 to 14 bytes are looked up the same way 4 bytes at a time. One pass, whatever the number of secrets (a
    search per spelling would cost a pass each), and a set small enough to stay in the processor's caches.
    """

    def __init__(self, values: Mapping[str, str]) -> None:
        # (spelling, name, whether pieces of it count): only the value itself, longer than a piece, not a place
        self.items: list[tuple[str, str, bool]] = []
        long_windows: set[int] = set()
        short_windows: set[int] = set()
        for value, name in values.items():
            skeleton = _without_space(value)
            pieces = len(skeleton) > MIN_FRAGMENT_LENGTH and not _names_a_place(value)
            for spelling in spellings_of(value):
                with_pieces = pieces and spelling == skeleton
                self.items.append((spelling, name, with_pieces))
                for data in _document_spellings(spelling):
                    if len(data) >= 15:
                        long_windows.update(_windows(data, 8, everywhere=with_pieces))
                    else:
                        short_windows.update(_windows(data, 4, everywhere=False))
        self.value_count = len(values)
        # The shortest text that can hold a spelling or a piece: shorter ones are not even looked at.
        self.shortest = min(MIN_FRAGMENT_LENGTH if pieces else len(spelling) for spelling, _, pieces in self.items)
        self._long_windows = frozenset(long_windows)
        self._short_windows = frozenset(short_windows)
        self._at: dict[str, list[int]] | None = None  # built by the first `mask`: most runs never need it

    def may_hold(self, data: bytes) -> bool:
        """False only when `data` (`plain_bytes` of a text, `document_bytes` of a JSON document) holds no
        spelling of any secret value and no piece of one."""
        # The view's integers are made one at a time as the set reads them (no list of them all): each lookup
        # reuses the memory the last one freed.
        size = len(data)
        view = memoryview(data)
        if size >= 8 and not self._long_windows.isdisjoint(view[: size - size % 8].cast("Q")):
            return True
        return bool(self._short_windows) and not self._short_windows.isdisjoint(view[: size - size % 4].cast("I"))

    def mask(self, text: str) -> str:
        """`text` with every spelling of every secret value, and every piece of `MIN_FRAGMENT_LENGTH` characters
        or more of one, replaced by its marker; found with spaces, tabs and line breaks left out, so a value split
        by them is found whole. Overlapping finds become one marker (the longest find's name)."""
        at = self._at if self._at is not None else self._index()
        kept = [i for i, char in enumerate(text) if char not in _SPACE] if _has_space(text) else None
        skeleton = "".join([text[i] for i in kept]) if kept is not None else text
        finds: set[tuple[int, int, str]] = set()
        for start in range(0, len(skeleton) - 3, 4):
            for place in at.get(skeleton[start : start + 4], ()):
                index, offset = divmod(place, _OFFSETS)
                spelling, name, pieces = self.items[index]
                begin = start - offset
                if begin >= 0 and skeleton.startswith(spelling, begin):
                    finds.add((begin, begin + len(spelling), name))
                elif pieces:
                    begin, end = _common_stretch(skeleton, start, spelling, offset)
                    if end - begin >= MIN_FRAGMENT_LENGTH:
                        finds.add((begin, end, name))
        if not finds:
            return text
        pieces_out: list[str] = []
        done = 0
        for begin, end, name in _merged(finds):
            first, last = (kept[begin], kept[end - 1] + 1) if kept is not None else (begin, end)
            pieces_out += [text[done:first], marker(name)]
            done = last
        return "".join([*pieces_out, text[done:]])

    def _index(self) -> dict[str, list[int]]:
        """Every 4 characters of every spelling, and where (`index * _OFFSETS + offset`): `mask` looks up the
        text's 4-character pieces at offsets 0, 4, 8…, and any spelling (8 characters or more) or secret piece
        holds one of them. Built once, under the module lock (two threads may mask at once)."""
        with _index_lock:
            if self._at is None:
                at: dict[str, list[int]] = {}
                for index, (spelling, _, _) in enumerate(self.items):
                    for offset in range(len(spelling) - 3):
                        at.setdefault(spelling[offset : offset + 4], []).append(index * _OFFSETS + offset)
                self._at = at
            return self._at


_OFFSETS = 1 << 32
_index_lock = threading.Lock()


def _windows(data: bytes, size: int, *, everywhere: bool) -> Iterable[int]:
    """The `size`-byte windows of `data` at offsets 0 to `size - 1` (`everywhere`: at every offset), each as the
    native-order integer `memoryview.cast` reads it."""
    last = len(data) - size if everywhere else min(size - 1, len(data) - size)
    return (int.from_bytes(data[i : i + size], sys.byteorder) for i in range(last + 1))


def _has_space(text: str) -> bool:
    return " " in text or "\n" in text or "\t" in text or "\r" in text


def _common_stretch(text: str, at: int, spelling: str, offset: int) -> tuple[int, int]:
    """The longest stretch of `text` around `text[at:at + 4] == spelling[offset:offset + 4]` that is also a
    stretch of `spelling` at the same alignment, as (start, end) in `text`."""
    end, other = at + 4, offset + 4
    while end < len(text) and other < len(spelling) and text[end] == spelling[other]:
        end, other = end + 1, other + 1
    begin, other = at, offset
    while begin > 0 and other > 0 and text[begin - 1] == spelling[other - 1]:
        begin, other = begin - 1, other - 1
    return begin, end


def _merged(finds: Iterable[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Finds (start, end, name), overlapping ones joined, in order; a joined find takes its longest part's name."""
    merged: list[tuple[int, int, str, int]] = []  # start, end, name, length of the find that gave the name
    for begin, end, name in sorted(finds):
        if merged and begin < merged[-1][1]:
            last_begin, last_end, last_name, longest = merged[-1]
            if end - begin > longest:
                last_name, longest = name, end - begin
            merged[-1] = (last_begin, max(last_end, end), last_name, longest)
        else:
            merged.append((begin, end, name, end - begin))
    return [(begin, end, name) for begin, end, name, _ in merged]
