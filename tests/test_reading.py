"""`evalward.reading`: regular files only, a size cap, UTF-8 without NUL characters, problems named by file."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalward.errors import EvalFileError, FileProblem
from evalward.reading import (
    DEFAULT_MAX_FILE_SIZE,
    decode_text,
    describe_size,
    file_sha256,
    iter_text_lines,
    max_file_size,
    open_regular_file,
    parse_size,
    read_file_bytes,
    read_text_file,
    set_max_file_size,
)


def only_problem(caught: pytest.ExceptionInfo[EvalFileError]) -> FileProblem:
    assert len(caught.value.problems) == 1
    return caught.value.problems[0]


@pytest.fixture
def small_cap() -> Iterator[None]:
    set_max_file_size(10)
    yield
    set_max_file_size(DEFAULT_MAX_FILE_SIZE)


def test_a_regular_utf8_file_is_read_and_its_bom_dropped(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_bytes(b'\xef\xbb\xbf{"k": "\xc3\xa9"}')
    assert read_text_file(path) == '{"k": "é"}'


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.eval.json"
    os.mkfifo(fifo)
    result: list[BaseException] = []

    def read() -> None:
        try:
            read_file_bytes(fifo)
        except EvalFileError as exc:
            result.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    reader.join(timeout=5)
    assert not reader.is_alive(), "reading a FIFO blocked"
    assert "a FIFO (named pipe), not a regular file" in str(result[0])


def test_a_link_to_a_device_a_directory_and_a_link_loop_are_named(tmp_path: Path) -> None:
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    (tmp_path / "loop.json").symlink_to(tmp_path / "loop.json")
    with pytest.raises(EvalFileError) as device:
        read_file_bytes(tmp_path / "zero.json", "zero.json")
    with pytest.raises(EvalFileError) as directory:
        read_file_bytes(tmp_path, "here")
    with pytest.raises(EvalFileError) as loop:
        read_file_bytes(tmp_path / "loop.json", "loop.json")
    with pytest.raises(EvalFileError) as missing:
        read_file_bytes(tmp_path / "missing.json", "missing.json")
    assert only_problem(device).render() == "zero.json: cannot read the file: it is a device, not a regular file"
    assert only_problem(directory).render() == "here: cannot read the file: it is a directory, not a regular file"
    assert only_problem(loop).render() == "loop.json: cannot read the file: its symbolic links form a loop"
    assert only_problem(missing).render() == "missing.json: cannot read the file: it does not exist"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_is_a_permission_problem(tmp_path: Path) -> None:
    path = tmp_path / "secret.json"
    path.write_text("{}")
    path.chmod(0)
    with pytest.raises(EvalFileError, match="permission denied"):
        read_file_bytes(path)


@pytest.mark.usefixtures("small_cap")
def test_the_size_cap_applies_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b"x" * 11)
    assert max_file_size() == 10
    with pytest.raises(EvalFileError) as caught:
        read_file_bytes(path, "big.json")
    problem = only_problem(caught)
    assert problem.message.startswith("the file is larger than the 10 bytes limit; raise it with --max-file-size")
    assert (problem.expected, problem.found) == ("at most 10 bytes", "11 bytes")
    path.write_bytes(b"x" * 10)
    assert read_file_bytes(path) == b"x" * 10


def test_the_size_cap_applies_while_reading_a_file_that_claims_to_be_small(tmp_path: Path) -> None:
    # /proc files report size 0 yet have content: only the running count can stop them.
    status = Path("/proc/self/status")
    if not status.is_file() or status.stat().st_size != 0:
        pytest.skip("needs Linux /proc")
    with pytest.raises(EvalFileError) as caught:
        read_file_bytes(status, "status", limit=16)
    assert only_problem(caught).found == "17 bytes or more"


def test_foreign_byte_order_marks_are_named() -> None:
    for raw, encoding in (
        (b"\xff\xfe{\x00}\x00", "UTF-16 LE"),
        (b"\xfe\xff\x00{\x00}", "UTF-16 BE"),
        (b"\xff\xfe\x00\x00{\x00\x00\x00", "UTF-32 LE"),
        (b"\x00\x00\xfe\xff\x00\x00\x00{", "UTF-32 BE"),
    ):
        with pytest.raises(EvalFileError) as caught:
            decode_text(raw, "f.json")
        assert only_problem(caught).message == (
            f"not UTF-8 text: the file starts with a {encoding} byte order mark; save it as UTF-8"
        )


def test_bad_bytes_and_nul_characters_are_located() -> None:
    with pytest.raises(EvalFileError) as bad:
        decode_text("a: 1\nbé: \xff\n".encode("latin-1").replace(b"\xe9", "é".encode()), "f.yaml")
    with pytest.raises(EvalFileError) as nul:
        decode_text("a: 1\nbé: x\x00y\n".encode(), "f.yaml")
    assert only_problem(bad).render() == "f.yaml:2:5: not UTF-8 text (bad byte 0xff at offset 10); expected UTF-8"
    assert only_problem(nul).render() == "f.yaml:2:6: the file contains a NUL character (\\0); expected text"


def test_sizes_parse_in_powers_of_1024_and_describe_themselves() -> None:
    assert parse_size("52428800") == parse_size("50MB") == parse_size("50m") == parse_size(" 50 MiB ") == 50 * 1024**2
    assert parse_size("512kb") == 512 * 1024
    assert parse_size("1G") == 1024**3
    for bad in ("", "MB", "1.5MB", "10 parsecs", "-1"):
        with pytest.raises(ValueError, match="is not a size"):
            parse_size(bad)
    assert [describe_size(n) for n in (10, 1536, 50 * 1024**2, 3 * 1024**3)] == [
        "10 bytes",
        "1.5 KiB",
        "50 MiB",
        "3 GiB",
    ]


def lines_of(path: Path) -> list[tuple[int, int, int, str]]:
    with open_regular_file(path) as file:
        return [(line.number, line.offset, line.length, line.text) for line in iter_text_lines(file, str(path))]


def test_lines_are_read_with_the_offsets_of_their_bytes(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"a": "\xc3\xa9"}\r\n\n  \n{"b": 2}')
    lines = lines_of(path)
    assert [(number, text) for number, _, _, text in lines] == [(1, '{"a": "é"}'), (2, ""), (3, "  "), (4, '{"b": 2}')]
    data = path.read_bytes()
    # Each line's bytes are found again by offset and length (the BOM and the line breaks left out).
    assert [data[offset : offset + length].decode() for _, offset, length, _ in lines] == [t for *_, t in lines]


@pytest.mark.parametrize(
    "data",
    [
        b'{"a": 1}\n{"b": "\xff"}\n',
        b'{"a": 1}\n{"b": "x\x00"}\n',
        b'{"a": 1}\n{"b": "x\x00"}\n{"c": "\xe2\x82"}\n',  # the bad byte wins over the earlier NUL
        b"\xff\xfe{}",
        b"\xef\xbb\xbf\xc3(",
    ],
)
def test_line_by_line_reading_reports_what_reading_whole_reports(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(data)
    with pytest.raises(EvalFileError) as whole:
        read_text_file(path)
    with pytest.raises(EvalFileError) as by_line:
        lines_of(path)
    assert by_line.value.problems == whole.value.problems


def test_line_by_line_reading_caps_each_line_not_the_file(tmp_path: Path, small_cap: None) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"0123456789\n" * 5)
    assert len(lines_of(path)) == 5  # 55 bytes, over the cap of 10, in lines of 10
    path.write_bytes(b"0123456789\n0123456789a\n")
    with pytest.raises(EvalFileError) as caught:
        lines_of(path)
    assert only_problem(caught).render() == (
        f"{path}:2: the line is longer than the 10 bytes limit; raise it with --max-file-size or "
        "EVALWARD_MAX_FILE_SIZE if the file is genuine; expected lines of at most 10 bytes"
    )


def test_a_file_is_hashed_whatever_its_size(tmp_path: Path, small_cap: None) -> None:
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"x" * 5000)
    assert file_sha256(path) == hashlib.sha256(b"x" * 5000).hexdigest()
    with pytest.raises(EvalFileError, match="it is a directory"):
        file_sha256(tmp_path)
