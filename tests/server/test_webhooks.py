"""Signature verification and delivery planning (pure: no app, no database)."""

from __future__ import annotations

import copy

import pytest
from tests.server.conftest import SECRET, example

from evalward._server.webhooks import plan_delivery, signature, verify_signature
from evalward.github.events import EventPayloadError

DOCS_VECTOR = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"


def test_signature_matches_githubs_documented_test_vector() -> None:
    # GitHub docs "Validating webhook deliveries": this secret and body give exactly this header.
    assert signature(SECRET, b"Hello, World!") == DOCS_VECTOR
    assert verify_signature([SECRET], b"Hello, World!", DOCS_VECTOR)


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        DOCS_VECTOR.removeprefix("sha256="),  # no prefix
        "sha1=" + DOCS_VECTOR.removeprefix("sha256="),
        DOCS_VECTOR[:-1] + "0",  # one hex digit off
        DOCS_VECTOR.upper(),
        "sha256=",
    ],
)
def test_signature_rejects_absent_malformed_and_wrong_headers(header: str | None) -> None:
    assert not verify_signature([SECRET], b"Hello, World!", header)


def test_signature_rejects_a_changed_body_and_accepts_any_configured_secret() -> None:
    assert not verify_signature([SECRET], b"Hello, World?", DOCS_VECTOR)
    assert verify_signature(["old-secret", SECRET], b"Hello, World!", DOCS_VECTOR)
    assert not verify_signature([], b"Hello, World!", DOCS_VECTOR)


@pytest.mark.parametrize("name", ["pull_request.opened.2", "pull_request.synchronize.1", "pull_request.reopened.1"])
def test_a_pr_by_the_owner_becomes_one_queued_evaluate_job(name: str) -> None:
    payload = example(name)
    plan = plan_delivery("pull_request", "d-1", payload)
    sha = payload["pull_request"]["head"]["sha"]
    assert [(j.kind, j.status, j.dedupe_key) for j in plan.jobs] == [
        ("evaluate", "queued", f"evaluate:Codertocat/Hello-World:{sha}:default")
    ]
    assert plan.jobs[0].payload["pr_number"] == 2
    assert plan.jobs[0].payload["installation_id"] == 1
    # The worker confirms the author's write access before running anything.
    assert plan.jobs[0].payload["verify_write_access"] == "Codertocat"
    assert plan.cancel_pr == ("Codertocat/Hello-World", 2, sha)


def test_a_fork_pr_is_held_with_a_notice_and_runs_after_the_label() -> None:
    payload = copy.deepcopy(example("pull_request.opened.2"))
    payload["pull_request"]["head"]["repo"]["full_name"] = "mallory/Hello-World"
    plan = plan_delivery("pull_request", "d-1", payload)
    assert [(j.kind, j.status) for j in plan.jobs] == [("evaluate", "held"), ("notice", "queued")]
    assert "fork" in plan.note

    labeled = copy.deepcopy(payload)
    labeled["action"] = "labeled"
    labeled["label"] = {"name": "evalward:run"}
    labeled["sender"]["login"] = "maintainer"
    plan = plan_delivery("pull_request", "d-2", labeled)
    assert [(j.kind, j.status) for j in plan.jobs] == [("evaluate", "queued")]
    assert plan.jobs[0].dedupe_key.startswith("evaluate:Codertocat/Hello-World:")
    # Adding a label needs only triage access: the worker confirms the labeller's write access.
    assert (plan.jobs[0].payload["approval"], plan.jobs[0].payload["verify_write_access"]) == ("label", "maintainer")

    # The label approved that head only: a later push is held again, and the notice removes the label.
    later = copy.deepcopy(payload)
    later["action"] = "synchronize"
    later["pull_request"]["head"]["sha"] = "b" * 40
    later["pull_request"]["labels"] = [{"name": "evalward:run"}]
    plan = plan_delivery("pull_request", "d-3", later)
    assert [(j.kind, j.status) for j in plan.jobs] == [("evaluate", "held"), ("notice", "queued")]
    assert plan.jobs[0].payload["approval"] is None
    assert plan.jobs[1].payload["stale_run_label"] == "evalward:run"
    assert "new commits since a maintainer approved it" in plan.jobs[1].payload["reason"]

    # Marking a labelled draft ready changes no commit: the label still approves that head.
    ready = copy.deepcopy(later)
    ready["action"] = "ready_for_review"
    plan = plan_delivery("pull_request", "d-4", ready)
    assert [(j.kind, j.status) for j in plan.jobs] == [("evaluate", "queued")]
    assert (plan.jobs[0].payload["approval"], plan.jobs[0].payload["stale_run_label"]) == ("label", None)


def test_a_push_to_a_labelled_pr_of_the_repository_asks_for_the_author_s_write_access_again() -> None:
    later = copy.deepcopy(example("pull_request.opened.2"))
    later["action"] = "synchronize"
    later["pull_request"]["labels"] = [{"name": "evalward:run"}]
    plan = plan_delivery("pull_request", "d-5", later)
    [job] = plan.jobs
    assert job.status == "queued" and job.payload["verify_write_access"] == "Codertocat"
    assert job.payload["stale_run_label"] == "evalward:run"


@pytest.mark.parametrize("association", ["OWNER", "MEMBER", "COLLABORATOR", "CONTRIBUTOR", "NONE"])
def test_author_association_decides_nothing_the_worker_asks_github(association: str) -> None:
    payload = copy.deepcopy(example("pull_request.opened.2"))
    payload["pull_request"]["author_association"] = association
    plan = plan_delivery("pull_request", "d-1", payload)
    assert [(j.kind, j.status) for j in plan.jobs] == [("evaluate", "queued")]
    assert plan.jobs[0].payload["verify_write_access"] == payload["pull_request"]["user"]["login"]
    # An author the payload does not name cannot be vouched for: "" makes the worker hold the job.
    del payload["pull_request"]["user"]
    assert plan_delivery("pull_request", "d-1", payload).jobs[0].payload["verify_write_access"] == ""


def test_other_labels_do_nothing() -> None:
    # The vendored labeled example adds "bug", not the run label.
    assert plan_delivery("pull_request", "d-2", example("pull_request.labeled.1")).jobs == []


def test_closed_cancels_and_drafts_wait() -> None:
    plan = plan_delivery("pull_request", "d", example("pull_request.closed.1"))
    assert plan.jobs == []
    assert plan.cancel_pr == ("Codertocat/Hello-World", 2, None)
    draft = copy.deepcopy(example("pull_request.opened.2"))
    draft["pull_request"]["draft"] = True
    assert plan_delivery("pull_request", "d", draft).jobs == []


def test_push_to_the_default_branch_is_a_baseline_run_and_tags_are_ignored() -> None:
    plan = plan_delivery("push", "d", example("push.event.2"))
    assert [(j.kind, j.dedupe_key) for j in plan.jobs] == [
        ("evaluate", "baseline:Codertocat/Hello-World:6113728f27ae82c7b1a177c8d03f9e96e0adf246:default")
    ]
    assert plan.jobs[0].payload["mode"] == "baseline"
    assert plan_delivery("push", "d", example("push.event.1")).jobs == []


def test_a_merge_queue_commit_is_evaluated_against_the_queue_base() -> None:
    head, base = "a" * 40, "b" * 40
    payload = {
        "action": "checks_requested",
        "merge_group": {
            "head_sha": head,
            "head_ref": f"refs/heads/gh-readonly-queue/main/pr-7-{base}",
            "base_sha": base,
            "base_ref": "refs/heads/main",
        },
        "repository": {"full_name": "acme/dice"},
        "installation": {"id": 42},
    }
    plan = plan_delivery("merge_group", "d", payload)
    [job] = plan.jobs
    assert (job.kind, job.dedupe_key, job.head_sha, job.status) == (
        "evaluate", f"merge_group:acme/dice:{head}:default", head, "queued"
    )  # fmt: skip
    assert {k: job.payload[k] for k in ("mode", "head_ref", "base_ref", "base_sha", "installation_id")} == {
        "mode": "merge_group",
        "head_ref": f"gh-readonly-queue/main/pr-7-{base}",
        "base_ref": "main",
        "base_sha": base,
        "installation_id": 42,
    }
    # only users with write access can queue a merge: nobody's permission is to be confirmed
    assert job.payload["verify_write_access"] is None and job.payload.get("pr_number") is None
    destroyed = {**payload, "action": "destroyed"}
    assert plan_delivery("merge_group", "d", destroyed).jobs == []
    with pytest.raises(EventPayloadError):
        plan_delivery("merge_group", "d", {**payload, "merge_group": {**payload["merge_group"], "head_sha": "x"}})


def test_rerequested_checks_release_or_rerun_and_other_apps_checks_are_ignored() -> None:
    suite = plan_delivery("check_suite", "d-9", example("check_suite.rerequested.1"))
    assert suite.release == ("Codertocat/Hello-World", example("check_suite.rerequested.1")["check_suite"]["head_sha"])
    # Only users with write access can re-run checks: the released job runs without another check.
    assert suite.release_updates == {"approval": "rerequest", "verify_write_access": None}
    assert suite.jobs[0].dedupe_key.endswith(":default:d-9")
    # The daemon passes the signed body's digest: a replay under another delivery id gets the same key.
    keyed = plan_delivery("check_suite", "d-10", example("check_suite.rerequested.1"), body_digest="c" * 64)
    assert keyed.jobs[0].dedupe_key.endswith(":default:" + "c" * 64)
    run = example("check_run.rerequested.1")
    assert plan_delivery("check_run", "d", run).jobs == []  # its name is "randscape", not ours
    run["check_run"]["name"] = "evalward"
    assert len(plan_delivery("check_run", "d", run).jobs) == 1
    assert plan_delivery("check_suite", "d", example("check_suite.requested.1")).jobs == []


def test_installations_are_recorded_and_ping_and_unknown_events_plan_nothing() -> None:
    plan = plan_delivery("installation", "d-5", example("installation.created.1"))
    assert [(j.kind, j.status, j.dedupe_key) for j in plan.jobs] == [("installation", "done", "installation:d-5")]
    assert plan.jobs[0].payload["installation_id"] == 957387
    assert plan_delivery("ping", "d", example("ping.event.1")).jobs == []
    assert plan_delivery("star", "d", {"action": "created"}).jobs == []


def test_a_pull_request_without_a_head_sha_is_a_payload_error() -> None:
    payload = copy.deepcopy(example("pull_request.opened.2"))
    del payload["pull_request"]["head"]["sha"]
    with pytest.raises(EventPayloadError, match=r"pull_request\.head\.sha"):
        plan_delivery("pull_request", "d", payload)
