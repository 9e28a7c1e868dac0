"""The Actions runtime: env and event, inputs, outputs file, job summary cap, log annotations."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evalward.errors import UsageError
from evalward.github import (
    ActionsEnv,
    LogAnnotation,
    append_step_summary,
    emit_annotations,
    format_annotation_command,
    read_inputs,
    untrusted_block,
    write_outputs,
)

HEAD = "1" * 40
BASE = "2" * 40
MERGE = "3" * 40


def _pr_event(head_repo: dict[str, str] | None) -> dict[str, object]:
    return {
        "action": "synchronize",
        "number": 42,
        "pull_request": {
            "number": 42,
            "draft": False,
            "head": {"sha": HEAD, "ref": "feature", "repo": head_repo},
            "base": {"sha": BASE, "ref": "main", "repo": {"full_name": "octo/agent"}},
            "merge_commit_sha": MERGE,
            "labels": [{"name": "evals"}],
            "unknown_future_field": {"anything": True},
        },
        "repository": {"full_name": "octo/agent"},
    }


def _env(tmp_path: Path, event_name: str, event: dict[str, object], **extra: str) -> dict[str, str]:
    event_file = tmp_path / "event.json"
    event_file.write_text(json.dumps(event), encoding="utf-8")
    return {
        "GITHUB_EVENT_NAME": event_name,
        "GITHUB_EVENT_PATH": str(event_file),
        "GITHUB_REPOSITORY": "octo/agent",
        "GITHUB_SHA": MERGE,  # the test merge commit on pull_request
        "GITHUB_REF": "refs/pull/42/merge",
        "GITHUB_RUN_ID": "987",
        "GITHUB_RUN_ATTEMPT": "2",
        "GITHUB_WORKFLOW": "Evals",
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        "INPUT_GITHUB-TOKEN": "ghs_secret",
        **extra,
    }


def test_pull_request_uses_head_sha_from_payload_not_github_sha(tmp_path: Path) -> None:
    env = ActionsEnv.from_environ(_env(tmp_path, "pull_request", _pr_event({"full_name": "octo/agent"})))
    assert env.is_pull_request and env.pr_number == 42
    assert env.head_sha == HEAD and env.sha == MERGE
    assert (env.base_ref, env.base_sha) == ("main", BASE)
    assert env.is_fork is False
    assert env.run_url == "https://github.com/octo/agent/actions/runs/987"
    assert env.api_url == "https://api.github.com"  # GITHUB_API_URL unset → the default
    assert env.token == "ghs_secret" and "ghs_secret" not in repr(env)


def test_fork_and_deleted_fork_are_forks(tmp_path: Path) -> None:
    fork = ActionsEnv.from_environ(_env(tmp_path, "pull_request", _pr_event({"full_name": "mallory/agent"})))
    deleted = ActionsEnv.from_environ(_env(tmp_path, "pull_request", _pr_event(None)))
    assert fork.is_fork and deleted.is_fork
    assert deleted.head_sha == HEAD


def test_push_event(tmp_path: Path) -> None:
    event = {"ref": "refs/heads/main", "before": BASE, "after": HEAD, "repository": {"full_name": "octo/agent"}}
    env = ActionsEnv.from_environ(
        _env(tmp_path, "push", event, GITHUB_SHA=HEAD, GITHUB_API_URL="https://ghe.test/api/v3/", GITHUB_TOKEN="t2")
    )
    assert not env.is_pull_request and env.pr_number is None and not env.is_fork
    assert env.head_sha == HEAD and env.base_sha is None
    assert env.push is not None and env.push.branch == "main"
    assert env.api_url == "https://ghe.test/api/v3"
    assert env.token == "ghs_secret"  # the action input wins over GITHUB_TOKEN


def test_unreadable_event_file_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "event.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(UsageError, match="cannot read the GitHub event payload"):
        ActionsEnv.from_environ({"GITHUB_EVENT_PATH": str(bad)})


def test_read_inputs_keeps_dashes_and_treats_empty_as_missing() -> None:
    env = {"INPUT_EVAL-SET": " evals/*.json ", "INPUT_DATABASE-URL": "", "INPUT_MY_INPUT": "x", "INPUT_EVAL_SET": "no"}
    assert read_inputs(env, ["eval-set", "database-url", "my input", "absent"]) == {
        "eval-set": "evals/*.json",
        "my input": "x",
    }


def test_outputs_file_format(tmp_path: Path) -> None:
    path = tmp_path / "output"
    write_outputs(path, {"verdict": "PASS", "report": "line 1\nline 2"})
    write_outputs(path, {"count": "3"})
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[0] == "verdict=PASS"
    match = re.fullmatch(r"report<<(ghadelimiter_[0-9a-f]{32})", lines[1])
    assert match is not None
    assert lines[2:6] == ["line 1", "line 2", match.group(1), "count=3"]


def test_output_delimiter_never_occurs_in_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evalward.github import actions

    tokens = iter(["aa", "bb"])
    monkeypatch.setattr(actions.secrets, "token_hex", lambda n: next(tokens))
    path = tmp_path / "output"
    write_outputs(path, {"x": "ghadelimiter_aa\nmore"})  # the first candidate occurs in the value
    assert path.read_text(encoding="utf-8") == "x<<ghadelimiter_bb\nghadelimiter_aa\nmore\nghadelimiter_bb\n"


def test_output_name_is_validated(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="output name"):
        write_outputs(tmp_path / "o", {"a=b": "c"})


def test_step_summary_under_cap_is_appended_whole(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    assert append_step_summary(path, "# One") is False
    assert append_step_summary(path, "# Two\n") is False
    assert path.read_text(encoding="utf-8") == "# One\n# Two\n"


def test_step_summary_is_cut_at_cap(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    path.write_text("x" * 100 + "\n", encoding="utf-8")  # 101 bytes already there
    markdown = "".join(f"row {i}\n" for i in range(300_000))  # ~2.4 MB
    assert append_step_summary(path, markdown) is True
    data = path.read_bytes()
    assert len(data) <= 1024 * 1024
    assert data.startswith(b"x" * 100 + b"\nrow 0\n")
    assert data.rstrip().endswith(b"the full report is in the run's artifacts.")
    body = data.decode().split("\n\n> **Summary cut**")[0]
    assert body.endswith("\n")  # cut on a line break, never inside a row


def test_step_summary_small_cap(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    assert append_step_summary(path, "a\n" * 200, max_bytes=250) is True
    assert len(path.read_bytes()) <= 250


def test_format_annotation_command_escapes_via_report() -> None:
    line = format_annotation_command(
        "error", "50% worse\nsee: a,b", file="evals/a,b.json", line=3, end_line=4, title="x: y"
    )
    assert line == "::error file=evals/a%2Cb.json,line=3,endLine=4,title=x%3A y::50%25 worse%0Asee: a,b"
    assert format_annotation_command("notice", "plain") == "::notice::plain"


def test_emit_annotations_keeps_ten_per_level_and_says_how_many_were_left_out() -> None:
    items = [LogAnnotation("error", f"e{i}") for i in range(13)]
    items += [LogAnnotation("warning", f"w{i}") for i in range(4)]
    items += [LogAnnotation("notice", f"n{i}") for i in range(10)]
    lines: list[str] = []
    left_out = emit_annotations(items, lines.append, more_at="the job summary")
    # errors: 10 of 13 (3 left); warnings: 4 of 4; notices: 9 of 10 (our notice takes the 10th slot).
    assert left_out == {"error": 3, "notice": 1}
    assert sum(line.startswith("::error::") for line in lines) == 10
    assert sum(line.startswith("::warning::") for line in lines) == 4
    assert sum(line.startswith("::notice") for line in lines) == 10
    assert lines[-1] == (
        "::notice title=More annotations::4 more annotations not shown (3 errors, 1 notice): GitHub keeps 10 per"
        " level per step. See the job summary.\n"
    )


def test_emit_annotations_under_limits_writes_no_notice() -> None:
    lines: list[str] = []
    assert emit_annotations([LogAnnotation("warning", "w", file="a.json", line=2)], lines.append) == {}
    assert lines == ["::warning file=a.json,line=2::w\n"]


def test_untrusted_block_stops_commands() -> None:
    block = untrusted_block("::add-mask::x\n::error::fake")
    first, *_, last = block.rstrip("\n").split("\n")
    token = first.removeprefix("::stop-commands::")
    assert len(token) == 32 and last == f"::{token}::"
