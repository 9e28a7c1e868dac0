"""Read a user-supplied file (eval set, test_config.json, session, recording) without trusting it.

Rules, in the order they are checked; each failure is one `FileProblem` naming the file (exit 2):
1. The path must lead (through any symbolic links) to a regular file: a FIFO, device, socket or directory
   is refused before it is opened, and the file is opened with `O_NONBLOCK` and checked again (`fstat`), so
   a FIFO swapped in between cannot block the read. A symbolic-link loop or a permission error is a problem.
2. At most `max_file_size()` bytes (50 MiB unless `--max-file-size` / `EVALWARD_MAX_FILE_SIZE` says
   otherwise): the size is checked before reading and again while reading, since a file can grow. A file
   read line by line (`iter_text_lines`: a recording of a million turns) is never held whole, so the limit
   applies to each of its lines instead; `file_sha256` holds nothing and has no limit.
3. The bytes must be UTF-8 (a UTF-8 byte order mark is dropped); a UTF-16 or UTF-32 byte order mark is
   named, so the remedy ("save it as UTF-8") is obvious. A bad byte is reported at its line and column.
4. No NUL character (`\\0`): no text format evalward reads has a use for one, and databases refuse them.
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, NamedTuple

from evalward.errors import EvalFileError, FileProblem

DEFAULT_MAX_FILE_SIZE = 50 * 1024 * 1024
"""Bytes: far above any real eval file, far below what would exhaust a CI runner's memory."""

_READ_CHUNK = 1024 * 1024
_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024**2, "mb": 1024**2, "mib": 1024**2}
_UNITS |= {"g": 1024**3, "gb": 1024**3, "gib": 1024**3}
_SIZE = re.compile(r"^\s*(\d+)\s*([a-z]*)\s*$", re.IGNORECASE)

# Longest first: a UTF-32 LE mark starts with the UTF-16 LE one.
_FOREIGN_BYTE_ORDER_MARKS: tuple[tuple[bytes, str], ...] = (
    (b"\xff\xfe\x00\x00", "UTF-32 LE"),
    (b"\x00\x00\xfe\xff", "UTF-32 BE"),
    (b"\xff\xfe", "UTF-16 LE"),
    (b"\xfe\xff", "UTF-16 BE"),
)
UTF8_BYTE_ORDER_MARK = b"\xef\xbb\xbf"

_max_file_size = DEFAULT_MAX_FILE_SIZE


def max_file_size() -> int:
    """The largest file, in bytes, that `read_file_bytes` accepts."""
    return _max_file_size


def set_max_file_size(limit: int) -> None:
    """Set the cap for every later read (the CLI's `--max-file-size`); at least one byte."""
    global _max_file_size
    if limit < 1:
        raise ValueError(f"the maximum file size must be at least 1 byte, got {limit}")
    _max_file_size = limit


def parse_size(text: str) -> int:
    """`52428800`, `50MB`, `50M`, `50MiB`, `512k`, `1GB` → bytes (units are powers of 1024)."""
    match = _SIZE.match(text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _UNITS:
        raise ValueError(f"{text!r} is not a size: give bytes, or a number with KB, MB or GB")
    return int(match.group(1)) * _UNITS[unit]


def describe_size(size: int) -> str:
    """`50 MiB`, `1.5 MiB`, `812 bytes`: a size for a message."""
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= factor:
            return f"{size / factor:.1f}".removesuffix(".0") + f" {unit}"
    return f"{size} bytes"


def read_text_file(path: str | Path, shown: str | None = None, *, limit: int | None = None) -> str:
    """The UTF-8 text of `path` (reported as `shown`), checked as the module docstring says."""
    shown = str(path) if shown is None else shown
    return decode_text(read_file_bytes(path, shown, limit=limit), shown)


def read_file_bytes(path: str | Path, shown: str | None = None, *, limit: int | None = None) -> bytes:
    """The bytes of the regular file `path`, at most `limit` (default `max_file_size()`) of them."""
    shown = str(path) if shown is None else shown
    limit = max_file_size() if limit is None else limit
    descriptor = _open_regular(path, shown, limit)
    try:
        expected = os.fstat(descriptor).st_size
        chunks: list[bytes] = []
        total = 0
        # The size the file says it has (+1 to see it grew) in one read where possible: joining chunks would
        # hold a large file twice.
        while chunk := os.read(descriptor, min(max(_READ_CHUNK, expected + 1 - total), limit + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
            _check_size(total, limit, shown, at_least=True)
    except OSError as exc:
        raise _unreadable(exc, shown) from None
    finally:
        os.close(descriptor)
    return b"".join(chunks)


def _open_regular(path: str | Path, shown: str, limit: int | None) -> int:
    """A descriptor of the regular file `path` (rule 1), checked against `limit` bytes unless it is None."""
    try:
        before = Path(path).stat()
        _check_regular(before, shown)
        if limit is not None:
            _check_size(before.st_size, limit, shown)
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise _unreadable(exc, shown) from None
    try:
        opened = os.fstat(descriptor)
        _check_regular(opened, shown)
        if limit is not None:
            _check_size(opened.st_size, limit, shown)
    except BaseException as exc:
        os.close(descriptor)
        if isinstance(exc, OSError):
            raise _unreadable(exc, shown) from None
        raise
    return descriptor


def open_regular_file(path: str | Path, shown: str | None = None) -> io.BufferedReader:
    """`path` opened for reading bytes once rule 1 holds; no size check, as the caller reads it in pieces."""
    shown = str(path) if shown is None else shown
    return io.BufferedReader(io.FileIO(_open_regular(path, shown, None), "rb"), buffer_size=_READ_CHUNK)


def file_sha256(path: str | Path, shown: str | None = None) -> str:
    """The SHA-256 (hex) of the regular file `path`, read in chunks: a file of any size costs no memory."""
    with open_regular_file(path, shown) as file:
        try:
            return hashlib.file_digest(file, "sha256").hexdigest()
        except OSError as exc:
            raise _unreadable(exc, str(path) if shown is None else shown) from None


class TextLine(NamedTuple):
    """One line of a file: its 1-based number, where its bytes are (without the line break) and its text."""

    number: int
    offset: int
    length: int
    text: str


def iter_text_lines(file: IO[bytes], shown: str, *, limit: int | None = None) -> Iterator[TextLine]:
    """The lines of `file` (from its start) one at a time, under rules 3 and 4 and with rule 2 per line.

    A line ends at `\\n` (a `\\r` before it is dropped); offsets count from the start of the file, byte order
    mark included, so `os.pread` finds a line's bytes again. The problems are those `read_text_file` reports,
    at the same line and column; a file with a NUL character yields nothing past it, and a bad UTF-8 byte
    later in the file is reported instead, as it would be when reading the file whole.
    """
    limit = max_file_size() if limit is None else limit
    file.seek(0)
    head = file.read(4)
    for mark, encoding in _FOREIGN_BYTE_ORDER_MARKS:
        if head.startswith(mark):
            raise _problem(
                shown,
                f"not UTF-8 text: the file starts with a {encoding} byte order mark; save it as UTF-8",
                expected="UTF-8",
                found=encoding,
            )
    skipped = len(UTF8_BYTE_ORDER_MARK) if head.startswith(UTF8_BYTE_ORDER_MARK) else 0
    file.seek(skipped)
    offset = skipped
    number = 0
    nul: EvalFileError | None = None
    while raw := file.readline(limit + 1):
        number += 1
        content = raw[:-1] if raw.endswith(b"\n") else raw
        if len(content) > limit:
            raise _problem(
                shown,
                f"the line is longer than the {describe_size(limit)} limit; raise it with --max-file-size "
                "or EVALWARD_MAX_FILE_SIZE if the file is genuine",
                line=number,
                expected=f"lines of at most {describe_size(limit)}",
            )
        content = content.removesuffix(b"\r")
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _problem(
                shown,
                f"not UTF-8 text (bad byte 0x{content[exc.start]:02x} at offset {offset - skipped + exc.start})",
                line=number,
                column=_column(content, exc.start),
                expected="UTF-8",
            ) from None
        if nul is None and "\x00" in text:
            nul = _problem(
                shown,
                "the file contains a NUL character (\\0)",
                line=number,
                column=text.index("\x00") + 1,
                expected="text",
            )
        if nul is None:
            yield TextLine(number, offset, len(content), text)
        offset += len(raw)
    if nul is not None:
        raise nul


def decode_text(raw: bytes, shown: str) -> str:
    """`raw` as UTF-8 text (a leading UTF-8 byte order mark dropped); no NUL characters."""
    for mark, encoding in _FOREIGN_BYTE_ORDER_MARKS:
        if raw.startswith(mark):
            raise _problem(
                shown,
                f"not UTF-8 text: the file starts with a {encoding} byte order mark; save it as UTF-8",
                expected="UTF-8",
                found=encoding,
            )
    body = raw.removeprefix(UTF8_BYTE_ORDER_MARK)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = _line_and_column(body, exc.start)
        raise _problem(
            shown,
            f"not UTF-8 text (bad byte 0x{body[exc.start]:02x} at offset {exc.start})",
            line=line,
            column=column,
            expected="UTF-8",
        ) from None
    nul = body.find(b"\x00")
    if nul != -1:
        line, column = _line_and_column(body, nul)
        raise _problem(shown, "the file contains a NUL character (\\0)", line=line, column=column, expected="text")
    return text


def _line_and_column(body: bytes, offset: int) -> tuple[int, int]:
    """1-based line and character column of the byte at `offset`."""
    line_start = body.rfind(b"\n", 0, offset) + 1
    return body.count(b"\n", 0, offset) + 1, _column(body[line_start:], offset - line_start)


def _column(line: bytes, offset: int) -> int:
    """1-based character column of the byte at `offset` of `line`."""
    return len(line[:offset].decode("utf-8", errors="replace")) + 1


def _check_regular(status: os.stat_result, shown: str) -> None:
    mode = status.st_mode
    if stat.S_ISREG(mode):
        return
    kind = (
        "a directory"
        if stat.S_ISDIR(mode)
        else "a FIFO (named pipe)"
        if stat.S_ISFIFO(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "not a regular file"
    )
    raise _problem(shown, f"cannot read the file: it is {kind}, not a regular file")


def _check_size(size: int, limit: int, shown: str, *, at_least: bool = False) -> None:
    if size > limit:
        raise _problem(
            shown,
            f"the file is larger than the {describe_size(limit)} limit; raise it with --max-file-size "
            "or EVALWARD_MAX_FILE_SIZE if the file is genuine",
            expected=f"at most {describe_size(limit)}",
            found=describe_size(size) + (" or more" if at_least else ""),
        )


def _unreadable(exc: OSError, shown: str) -> EvalFileError:
    if exc.errno == errno.ELOOP:
        return _problem(shown, "cannot read the file: its symbolic links form a loop")
    if exc.errno == errno.ENOENT:
        return _problem(shown, "cannot read the file: it does not exist")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return _problem(shown, "cannot read the file: permission denied")
    return _problem(shown, f"cannot read the file: {exc.strerror or exc}")


def _problem(
    shown: str,
    message: str,
    *,
    line: int | None = None,
    column: int | None = None,
    expected: str | None = None,
    found: str | None = None,
) -> EvalFileError:
    return EvalFileError(
        [FileProblem(path=shown, message=message, line=line, column=column, expected=expected, found=found)]
    )
