"""`evalward ci` end to end: GitHub's example events, a real agent run, the history database and a fake GitHub.

Scenarios: a push stores the baseline; pull requests from the same repository and from a fork are gated
against it; comments stay one per suite through repeated and concurrent runs; statuses and check runs land
on the PR head SHA (never the merge commit); annotations are batched; outputs, job summary and the
artifact are written; GitHub failures and read-only tokens never change the exit code.
"""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from evalward._ci import CiResult, report_from_artifact, run_ci
from evalward.errors import UsageError

from .conftest import (
    CITIES,
    MERGE_SHA,
    PR_BASE,
    PR_HEAD,
    PR_NUMBER,
    REPO,
    Workspace,
    eval_set,
    fork_workflow_run_payload,
    outputs,
    pull_request_payload,
    push_payload,
    summary,
)


def statuses_on(workspace: Workspace, sha: str) -> list[dict[str, object]]:
    return [s for s in workspace.fake.statuses if s["sha"] == sha]


def checks_on(workspace: Workspace, sha: str) -> list[dict[str, object]]:
    return [r for r in workspace.fake.check_runs.values() if r["head_sha"] == sha]


def test_push_stores_the_baseline_and_reports_on_the_pushed_commit(workspace: Workspace) -> None:
    env = workspace.env("push", push_payload())
    result, log = workspace.run(env)

    # The repository's first commit and nothing stored: a first run, judged by its thresholds alone (as ADK
    # does); every case passes them.
    assert result.exit_code == 0
    assert result.verdict is not None and result.verdict.outcome == "pass"
    assert result.verdict.headline.startswith("Every case met its thresholds (a first run")
    [status] = statuses_on(workspace, PR_BASE)
    assert (status["state"], status["context"]) == ("success", "evalward/evals")
    assert status["target_url"] == "https://github.test/Codertocat/Hello-World/actions/runs/9001"
    assert len(str(status["description"])) <= 140
    [check] = checks_on(workspace, PR_BASE)
    assert (check["name"], check["conclusion"]) == ("evalward/evals", "success")
    assert workspace.fake.comments == {}  # no PR, no comment
    assert result.run is not None and result.run.context.branch == "master"
    assert outputs(env)["verdict"] == "pass"
    assert "evalward: gate pass" in log


def test_pull_request_three_runs_leave_one_comment_and_report_on_the_head_sha(workspace: Workspace) -> None:
    workspace.push()
    urls = []
    for _ in range(3):
        env = workspace.env("pull_request", pull_request_payload())
        result, _log = workspace.run(env)
        assert result.exit_code == 0
        urls.append(result.comment_url)

    [comment] = workspace.fake.comments_on(REPO, PR_NUMBER)
    assert comment["user"]["login"] == "github-actions[bot]"
    assert comment["body"].startswith("<!-- evalward:CI/evals -->\n<!-- evalward-verdict: pass -->\n")
    assert "gate passed" in comment["body"]
    assert urls == [comment["html_url"]] * 3
    # The first run created it, the later ones found it and left it (identical body → no PATCH needed or one).
    assert len(workspace.fake.requests_to("POST", "/issues/2/comments")) == 1
    # Statuses and check runs on the PR head, never on the merge commit GITHUB_SHA points at.
    assert statuses_on(workspace, MERGE_SHA) == [] and checks_on(workspace, MERGE_SHA) == []
    assert [s["state"] for s in statuses_on(workspace, PR_HEAD)] == ["success"] * 3
    assert {c["conclusion"] for c in checks_on(workspace, PR_HEAD)} == {"success"}

    out = outputs(env)
    assert out["verdict"] == "pass" and out["passed"] == "true" and out["regressions"] == "0"
    assert out["comment-url"] == comment["html_url"]
    assert out["run-id"] == result.run.run_id if result.run else False
    assert Path(out["results-json"]).name == "run.json"
    assert summary(env).startswith("### ✅ No regression: 100% of repetitions pass")
    assert "**evalward: evals: gate passed.**" in summary(env)
    # The comment and the summary point to the full HTML report among the workflow run's artifacts.
    run_url = f"https://github.test/{REPO}/actions/runs/{env['GITHUB_RUN_ID']}"
    link = f"[Full HTML report (report.html in the evalward-results artifact)]({run_url}#artifacts)"
    assert link in comment["body"] and link in summary(env)
    assert (workspace.root / "evalward-results" / "report.html").read_text().startswith("<!DOCTYPE html>")
    # The PR run was compared with the push run at the PR's base commit.
    assert result.verdict is not None and result.verdict.baseline is not None
    assert result.verdict.baseline.chosen_by.startswith(f"merge-base {PR_BASE[:7]} on master")


def test_regression_fails_the_step_with_annotations_on_the_eval_file(workspace: Workspace) -> None:
    workspace.push()
    workspace.agent("bad")
    env = workspace.env("pull_request", pull_request_payload())
    result, log = workspace.run(env)

    assert result.exit_code == 1
    assert result.verdict is not None and result.verdict.outcome == "fail"
    # `regressions` counts every blocking finding of a change for the worse (ci.exit_code): the pass rate's
    # regression — 6 cases pass → fail at one repetition, exact McNemar p = 1/64. (The cases are its evidence,
    # not findings of their own: thresholds gate on change.)
    assert outputs(env)["regressions"] == "1" and outputs(env)["passed"] == "false"
    [check] = checks_on(workspace, PR_HEAD)
    assert check["conclusion"] == "failure"
    annotations = workspace.fake.annotations_of(int(check["id"]))  # type: ignore[call-overload]
    # Six broken cases, each on its own line of evals/weather.eval.json (json.dumps indent=2: the case
    # objects open at lines 5, 16, 27, … — 11 lines per case — and the `"id"` key is the next line).
    assert sorted(a["path"] for a in annotations) == ["evals/weather.eval.json"] * 6
    assert {a["annotation_level"] for a in annotations} == {"failure"}
    lines = sorted(a["start_line"] for a in annotations)
    assert len(set(lines)) == 6 and all(line > 1 for line in lines)
    [status] = statuses_on(workspace, PR_HEAD)
    assert status["state"] == "failure" and str(status["description"]).startswith("Failed: 1 blocking finding")
    assert log.count("::error file=evals/weather.eval.json,") == 6
    assert "gate failed" in workspace.fake.comments_on(REPO, PR_NUMBER)[0]["body"]


def test_fail_on_selects_what_fails_the_step(workspace: Workspace) -> None:
    workspace.push()
    workspace.agent("bad")
    # Report only: the same failing verdict, exit 0, check neutral, status success marked "report only".
    env = workspace.env("pull_request", pull_request_payload())
    result, _ = workspace.run(env, fail_on=frozenset())
    assert result.exit_code == 0 and result.verdict is not None and result.verdict.outcome == "fail"
    assert checks_on(workspace, PR_HEAD)[-1]["conclusion"] == "neutral"
    assert str(statuses_on(workspace, PR_HEAD)[-1]["description"]).endswith("report only")


def test_comment_on_failure_posts_when_failing_and_flips_to_passing(workspace: Workspace) -> None:
    workspace.push()
    # Passing first: on-failure posts nothing.
    result, _ = workspace.run(workspace.env("pull_request", pull_request_payload()), comment="on-failure")
    assert result.comment_url is None and workspace.fake.comments_on(REPO, PR_NUMBER) == []
    # Failing: posted.
    workspace.agent("bad")
    workspace.run(workspace.env("pull_request", pull_request_payload()), comment="on-failure")
    [comment] = workspace.fake.comments_on(REPO, PR_NUMBER)
    assert "evalward-verdict: fail" in comment["body"]
    # Passing again: the failing comment is updated to say so.
    workspace.agent("good")
    workspace.run(workspace.env("pull_request", pull_request_payload()), comment="on-failure")
    [comment] = workspace.fake.comments_on(REPO, PR_NUMBER)
    assert "evalward-verdict: pass" in comment["body"] and "gate passed" in comment["body"]


def test_comment_on_change_updates_only_when_the_verdict_changes(workspace: Workspace) -> None:
    workspace.push()
    workspace.run(workspace.env("pull_request", pull_request_payload()), comment="on-change")
    workspace.run(workspace.env("pull_request", pull_request_payload()), comment="on-change")
    # Same verdict (pass): the second run neither posts nor edits.
    assert len(workspace.fake.requests_to("POST", "/comments")) == 1
    assert workspace.fake.requests_to("PATCH", "/comments/") == []
    workspace.agent("bad")
    workspace.run(workspace.env("pull_request", pull_request_payload()), comment="on-change")
    assert len(workspace.fake.requests_to("PATCH", "/comments/")) == 1
    [comment] = workspace.fake.comments_on(REPO, PR_NUMBER)
    assert "evalward-verdict: fail" in comment["body"]


def test_a_forged_marker_by_a_person_is_not_our_comment(workspace: Workspace) -> None:
    workspace.push()
    workspace.fake.seed_comment(
        REPO, PR_NUMBER, "<!-- evalward:CI/evals -->\n<!-- evalward-verdict: pass -->\nLGTM", login="mallory"
    )
    workspace.run(workspace.env("pull_request", pull_request_payload()), comment="on-change")
    comments = workspace.fake.comments_on(REPO, PR_NUMBER)
    assert [c["user"]["login"] for c in comments] == ["mallory", "github-actions[bot]"]
    assert comments[0]["body"].endswith("LGTM")  # untouched


def test_two_concurrent_runs_leave_exactly_one_comment(workspace: Workspace) -> None:
    workspace.push()
    results: list[CiResult] = []
    envs = [workspace.env("pull_request", pull_request_payload()) for _ in range(2)]

    def one(env: dict[str, str]) -> None:
        results.append(
            run_ci(
                workspace.options(),
                env=env,
                out=io.StringIO(),
                err=io.StringIO(),
                client_factory=workspace.client_factory,
                root=workspace.root,
            )
        )

    threads = [threading.Thread(target=one, args=(env,)) for env in envs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert [r.exit_code for r in results] == [0, 0]
    assert len(workspace.fake.comments_on(REPO, PR_NUMBER)) == 1
    assert len(statuses_on(workspace, PR_HEAD)) == 2


def test_fork_with_a_read_only_token_degrades_and_the_artifact_posts_later(workspace: Workspace) -> None:
    workspace.push()
    workspace.fake.read_only = True
    env = workspace.env("pull_request", pull_request_payload(fork=True))
    result, log = workspace.run(env)

    # The verdict decides the exit code, not the 403s.
    assert result.exit_code == 0 and result.verdict is not None and result.verdict.outcome == "pass"
    assert workspace.fake.comments == {}
    assert statuses_on(workspace, PR_HEAD) == [] and checks_on(workspace, PR_HEAD) == []
    assert log.count("::warning title=evalward reporting::could not post the") == 3
    assert "Resource not accessible by integration" in summary(env)
    assert "gate passed" in summary(env)
    artifact = workspace.root / "evalward-results"
    meta = json.loads((artifact / "meta.json").read_text())
    assert (meta["pr_number"], meta["head_sha"], meta["repository"]) == (PR_NUMBER, PR_HEAD, REPO)
    assert {p.name for p in artifact.iterdir()} == {
        "meta.json",
        "run.json",
        "verdict.json",
        "baseline.json",
        "report.html",
    }

    # The workflow_run workflow: a write token, the artifact, no checkout. It cross-checks the head SHA.
    workspace.fake.read_only = False
    workspace.fake.add_pull(REPO, PR_NUMBER, head_sha=PR_HEAD, base_sha=PR_BASE, head_repo="forker/Hello-World")
    run_event = fork_workflow_run_payload()
    report_env = workspace.env("workflow_run", run_event)
    out = io.StringIO()
    posted = report_from_artifact(artifact, env=report_env, out=out, client_factory=workspace.client_factory)
    assert posted.exit_code == 0, out.getvalue()
    [comment] = workspace.fake.comments_on(REPO, PR_NUMBER)
    assert "gate passed" in comment["body"] and posted.comment_url == comment["html_url"]
    assert [s["state"] for s in statuses_on(workspace, PR_HEAD)] == ["success"]
    assert [c["conclusion"] for c in checks_on(workspace, PR_HEAD)] == ["success"]
    assert outputs(report_env)["comment-url"] == comment["html_url"]


def test_report_from_artifact_refuses_results_for_another_commit(workspace: Workspace) -> None:
    workspace.push()
    workspace.run(workspace.env("pull_request", pull_request_payload(fork=True)), comment="never")
    run_event = {"action": "completed", "workflow_run": {"id": 1, "head_sha": "b" * 40, "pull_requests": []}}
    env = workspace.env("workflow_run", run_event)
    before = len(workspace.fake.requests)
    with pytest.raises(UsageError, match="refusing to post results for another commit"):
        report_from_artifact(workspace.root / "evalward-results", env=env, client_factory=workspace.client_factory)
    assert len(workspace.fake.requests) == before  # refused before any request


def test_report_from_artifact_skips_the_comment_when_the_pr_moved_on(workspace: Workspace) -> None:
    workspace.push()
    workspace.run(workspace.env("pull_request", pull_request_payload(fork=True)), comment="never")
    workspace.fake.add_pull(REPO, PR_NUMBER, head_sha="c" * 40, base_sha=PR_BASE, head_repo="forker/Hello-World")
    run_event = {
        "workflow_run": {
            "head_sha": PR_HEAD,
            "pull_requests": [],
            "head_repository": {"full_name": "forker/Hello-World"},
        }
    }
    posted = report_from_artifact(
        workspace.root / "evalward-results",
        env=workspace.env("workflow_run", run_event),
        out=io.StringIO(),
        client_factory=workspace.client_factory,
    )
    assert posted.exit_code == 0
    assert workspace.fake.comments_on(REPO, PR_NUMBER) == []
    assert len(statuses_on(workspace, PR_HEAD)) == 2  # one from the evals run (fake not read-only), one now
    assert any("has moved on" in note for note in posted.notes)


def test_github_failures_are_retried_then_reported_without_changing_the_exit_code(workspace: Workspace) -> None:
    workspace.push()
    workspace.agent("bad")
    workspace.fake.inject("502", 10, path_contains="/statuses/")
    env = workspace.env("pull_request", pull_request_payload())
    result, log = workspace.run(env)

    assert result.exit_code == 1  # the regression, not the outage
    # 1 + 5 retries, backed off 2^k × (0.5 + 1/2) s with jitter() = 1: 1, 2, 4, 8, 16 s (recorded, not slept).
    assert workspace.waits == [1.0, 2.0, 4.0, 8.0, 16.0]
    assert "::warning title=evalward reporting::could not post the commit status" in log
    assert "could not post the commit status" in summary(env)
    assert len(checks_on(workspace, PR_HEAD)) == 1 and len(workspace.fake.comments_on(REPO, PR_NUMBER)) == 1


def test_annotations_are_batched_50_per_request_and_10_per_level_in_the_log(workspace: Workspace) -> None:
    many = [f"City{i:03d}" for i in range(120)]
    (workspace.root / "evals" / "weather.eval.json").write_text(json.dumps(eval_set(many), indent=2))
    workspace.agent("allbad")
    env = workspace.env("pull_request", pull_request_payload())
    result, log = workspace.run(env, baseline="none")

    assert result.exit_code == 1
    [check] = checks_on(workspace, PR_HEAD)
    # 120 annotations: the create carries 50, then two PATCHes carry 50 and 20 (GitHub appends them).
    assert len(workspace.fake.annotations_of(int(check["id"]))) == 120  # type: ignore[call-overload]
    patches = workspace.fake.requests_to("PATCH", "/check-runs/")
    assert [len(p.body["output"]["annotations"]) for p in patches] == [50, 20]
    # The log keeps 10 errors, then one notice counting the 110 left out.
    assert log.count("::error file=") == 10
    assert "::notice title=More annotations::110 more annotations not shown (110 errors)" in log


def test_workflow_dispatch_reports_to_the_job_summary_only(workspace: Workspace) -> None:
    env = workspace.env("workflow_dispatch", {"inputs": {}, "ref": "refs/heads/master"})
    result, _ = workspace.run(env)
    assert result.exit_code == 0
    assert workspace.fake.requests == []
    # No base branch or commit: a first run, judged by the thresholds alone.
    assert "evalward: evals: gate passed" in summary(env)
    assert "no base branch or base commit is known" in summary(env)


def test_shards_merge_and_fail_closed_when_one_is_missing(workspace: Workspace, tmp_path: Path) -> None:
    workspace.push()
    shards = tmp_path / "shards"
    for index in (1, 2):
        env = workspace.env("pull_request", pull_request_payload())
        result, _ = workspace.run(env, shard=f"{index}/2", results_artifact=str(shards / f"shard-{index}"))
        assert result.exit_code == 0 and result.verdict is None  # shards are not gated
        assert outputs(env)["verdict"] == ""

    env = workspace.env("pull_request", pull_request_payload())
    merged, _ = workspace.run(env, merge_shards=str(shards), db_url=f"sqlite:///{tmp_path / 'merge.db'}")
    # The merge job has its own database: no stored baseline there, so the base side is run on demand.
    assert merged.exit_code == 0 and merged.run is not None
    assert sorted(c.case_id for c in merged.run.cases) == sorted(c.lower() for c in CITIES)
    assert merged.verdict is not None and merged.verdict.outcome == "pass"
    assert merged.verdict.baseline is not None and merged.verdict.baseline.on_demand_cases == len(CITIES)

    # Shard 2's job failed: its artifact is missing, so the merge refuses to gate half the cases.
    (shards / "shard-2" / "run.json").unlink()
    env = workspace.env("pull_request", pull_request_payload())
    failed, log = workspace.run(env, merge_shards=str(shards), db_url=f"sqlite:///{tmp_path / 'merge2.db'}")
    assert failed.exit_code == 2
    assert "missing shard 2/2" in log and "missing shard 2/2" in summary(env)
    assert statuses_on(workspace, PR_HEAD)[-1]["state"] == "error"
    assert outputs(env)["verdict"] == "error"


def test_an_agent_that_cannot_start_is_infrastructure_not_a_regression(workspace: Workspace) -> None:
    env = workspace.env("pull_request", pull_request_payload())
    result, log = workspace.run(env, agent="cmd:/nonexistent/agent-binary")
    assert result.exit_code == 3
    assert "::error title=evalward could not run::" in log
    assert statuses_on(workspace, PR_HEAD)[-1]["state"] == "error"


def merge_group_payload() -> dict[str, Any]:
    """A merge queue's `checks_requested` (GitHub's documented shape): the queue built `PR_HEAD` on `PR_BASE`."""
    return {
        "action": "checks_requested",
        "merge_group": {
            "head_sha": PR_HEAD,
            "head_ref": f"refs/heads/gh-readonly-queue/master/pr-{PR_NUMBER}-{PR_BASE}",
            "base_sha": PR_BASE,
            "base_ref": "refs/heads/master",
            "head_commit": {
                "id": PR_HEAD,
                "tree_id": PR_HEAD,
                "message": "Merge queue",
                "timestamp": "2026-01-01T00:00:00Z",
            },
        },
        "repository": {"full_name": REPO, "name": "Hello-World", "owner": {"login": "Codertocat"}},
        "sender": {"login": "Codertocat"},
    }


def test_merge_group_is_gated_against_the_queue_base_and_reports_on_its_head(workspace: Workspace) -> None:
    """docs/gate.md §9: a merge queue's commit is compared with the stored run at the queue's base, and the status
    and check run go on the commit the queue waits for."""
    workspace.push()
    workspace.agent("bad")
    env = workspace.env("merge_group", merge_group_payload())
    env["GITHUB_SHA"] = PR_HEAD
    env["GITHUB_REF"] = f"refs/heads/gh-readonly-queue/master/pr-{PR_NUMBER}-{PR_BASE}"
    result, log = workspace.run(env)

    assert result.exit_code == 1, log
    assert result.verdict is not None and result.verdict.outcome == "fail"
    assert result.verdict.baseline is not None and result.verdict.baseline.commit == PR_BASE
    assert result.run is not None and result.run.context.commit == PR_HEAD
    assert result.run.context.merge_base == PR_BASE and result.run.context.base_branch == "master"
    [status] = statuses_on(workspace, PR_HEAD)
    assert (status["state"], status["context"]) == ("failure", "evalward/evals")
    [check] = checks_on(workspace, PR_HEAD)
    assert check["conclusion"] == "failure"
    assert workspace.fake.comments == {}  # a queue has no PR conversation to comment in
