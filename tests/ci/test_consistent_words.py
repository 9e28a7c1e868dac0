"""`evalward ci` on GitHub's events: what the step says agrees with what it does.

The annotations of a case the gate failed on say why and never "not gated"; newly broken cases are counted
("passed 3 of 3, now 0 of 3"); a push names its run "this commit"; and the `passed` output is "true" exactly when
the step exits 0 because the gate did not block it — for `evalward ci` and for `report --from-artifact` alike.
"""

from __future__ import annotations

import io

from evalward._ci import report_from_artifact

from .conftest import (
    BROKEN,
    CITIES,
    PR_BASE,
    PR_HEAD,
    PR_NUMBER,
    REPO,
    Workspace,
    fork_workflow_run_payload,
    outputs,
    pull_request_payload,
    push_payload,
    summary,
)

NO_TOP_UP = {"top_up": {"max_runs": 0}}
"""Decide on the runs as they are: no top-up repetitions that could settle an inconclusive verdict."""


def test_cases_the_gate_failed_on_are_annotated_as_such_never_as_not_gated(workspace: Workspace) -> None:
    workspace.agent("good")
    workspace.run(workspace.env("push", push_payload()), repeat=3)
    workspace.agent("bad")
    env = workspace.env("pull_request", pull_request_payload())
    result, log = workspace.run(env, repeat=3)

    # Six cases went 3/3 → 0/3: by chance each with probability 1/C(6,3) = 1/20, so the newly-broken test blocks.
    assert result.exit_code == 1
    assert result.verdict is not None and result.verdict.newly_broken is not None
    assert result.verdict.newly_broken.significant
    broken = sorted(f"weather/{city.lower()}" for city in CITIES[:BROKEN])
    assert sorted(result.verdict.newly_broken.cases) == broken
    # The headline counts the passes; one stored run on master is no history to say "always".
    [comment] = workspace.fake.comments_on(REPO, PR_NUMBER)
    headline = comment["body"].split("\n")[2]
    assert headline.startswith("### ❌ 6 cases passed 3 of 3, now 0 of 3: weather/")
    assert "always" not in headline

    [check] = [c for c in workspace.fake.check_runs.values() if c["head_sha"] == PR_HEAD]
    annotations = workspace.fake.annotations_of(int(check["id"]))
    assert len(annotations) == BROKEN and {a["annotation_level"] for a in annotations} == {"failure"}
    for annotation in annotations:
        assert "not gated" not in annotation["message"] and "not gated" not in annotation["title"]
        assert annotation["message"].startswith(
            "The gate failed on this case: it is newly broken (passed 3 of 3 at the baseline, 0 of 3 now)."
        )
        assert "newly broken" in annotation["title"]
    errors = [line for line in log.splitlines() if line.startswith("::error file=")]
    assert len(errors) == BROKEN and not any("not gated" in line for line in errors)


def test_a_push_names_its_run_this_commit(workspace: Workspace) -> None:
    workspace.push()
    workspace.agent("bad")
    payload = push_payload()
    payload["before"], payload["after"] = PR_BASE, PR_HEAD
    env = workspace.env("push", payload)
    result, log = workspace.run(env)

    assert result.verdict is not None and result.verdict.baseline is not None  # compared with the first push
    assert result.run is not None and result.run.context.pr_number is None
    text = summary(env)
    assert "| metric | baseline | this commit |" in text
    assert "of this commit (failed)" in text
    assert "this PR" not in text and "this PR" not in log


def test_passed_agrees_with_the_exit_code(workspace: Workspace) -> None:
    workspace.push()

    # Inconclusive (ten cases at one repetition cannot show that nothing got worse): exit 0, so passed.
    env = workspace.env("pull_request", pull_request_payload())
    result, _ = workspace.run(env, gate_settings=NO_TOP_UP)
    assert result.verdict is not None and result.verdict.outcome == "inconclusive"
    assert (result.exit_code, outputs(env)["verdict"], outputs(env)["passed"]) == (0, "inconclusive", "true")

    # The same, strict, with `fail-on` naming inconclusive: the step fails (undecided, exit 2), so not passed.
    env = workspace.env("pull_request", pull_request_payload())
    fail_on = frozenset({"regression", "threshold", "inconclusive"})
    result, _ = workspace.run(env, gate_settings={**NO_TOP_UP, "strict": True}, fail_on=fail_on)
    assert (result.exit_code, outputs(env)["verdict"], outputs(env)["passed"]) == (2, "fail", "false")

    # A regression under `fail-on: none` (report only): the gate failed but did not block the step, so passed.
    workspace.agent("bad")
    env = workspace.env("pull_request", pull_request_payload(fork=True))
    result, _ = workspace.run(env, gate_settings={"delta_ni": 0.3}, fail_on=frozenset(), comment="never")
    assert (result.exit_code, outputs(env)["verdict"], outputs(env)["passed"]) == (0, "fail", "true")

    # The artifact posted later says the same: its `fail-on` did not block the step.
    workspace.fake.add_pull(REPO, PR_NUMBER, head_sha=PR_HEAD, base_sha=PR_BASE, head_repo="forker/Hello-World")
    run_event = fork_workflow_run_payload()
    report_env = workspace.env("workflow_run", run_event)
    out = io.StringIO()
    posted = report_from_artifact(
        workspace.root / "evalward-results", env=report_env, out=out, client_factory=workspace.client_factory
    )
    assert posted.exit_code == 0, out.getvalue()
    assert (outputs(report_env)["verdict"], outputs(report_env)["passed"]) == ("fail", "true")

    # The regression with the default `fail-on`: the step fails, so not passed.
    env = workspace.env("pull_request", pull_request_payload())
    result, _ = workspace.run(env, gate_settings={"delta_ni": 0.3})
    assert (result.exit_code, outputs(env)["verdict"], outputs(env)["passed"]) == (1, "fail", "false")
