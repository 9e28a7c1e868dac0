"""`evalward report --from-artifact DIR`: post a results artifact from a `workflow_run` job (no PR code runs)."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from evalward._ci.artifact import read_artifact
from evalward._ci.event import ClientFactory, default_client
from evalward._ci.exit_code import decide_exit, passed_output
from evalward._ci.render import render_outcome
from evalward._ci.result import CiResult, finish_log, write_step_outputs
from evalward.errors import EXIT_INFRASTRUCTURE, EXIT_OK, UsageError
from evalward.github.actions import ActionsEnv, append_step_summary
from evalward.github.publish import CommentMode, Posted, Target, publish
from evalward.github.sticky import DEFAULT_BOT_LOGINS


def report_from_artifact(
    directory: Path,
    *,
    env: Mapping[str, str],
    out: TextIO | None = None,
    client_factory: ClientFactory | None = None,
    comment: CommentMode | None = None,
    commit_status: bool | None = None,
    check_run: bool | None = None,
    bot_logins: Sequence[str] = DEFAULT_BOT_LOGINS,
    root: Path | None = None,
) -> CiResult:
    """Post a results artifact's comment, status and check run from a `workflow_run` job (no PR code runs).

    Checks, all before anything is posted: the artifact validates; its repository is `GITHUB_REPOSITORY`;
    when the event is `workflow_run`, `workflow_run.head_sha` equals the artifact's head SHA; the PR's
    current head (`GET pulls/N`) equals it too — if the PR has moved on since, the status and check still
    go on the evaluated commit but the comment is skipped (it would describe old code). Returns exit 0 when
    everything was posted, 3 when GitHub refused or failed (the eval verdict itself is not re-decided here).
    """
    out = out or sys.stdout
    factory = client_factory or default_client
    actions = ActionsEnv.from_environ(env)
    artifact = read_artifact(directory)
    meta = artifact.meta
    if artifact.verdict is None:
        raise UsageError(
            f"{directory}: the artifact holds no verdict (a shard, or a run that could not finish): nothing to post"
        )
    if actions.repository and meta.repository != actions.repository:
        raise UsageError(
            f"{directory}/meta.json: results for {meta.repository!r}, but this workflow runs in {actions.repository!r}"
        )
    trusted_sha: str | None = None
    head_repo: str | None = None
    if actions.event_name == "workflow_run":
        workflow_run = actions.event.get("workflow_run")
        if isinstance(workflow_run, Mapping):
            sha = workflow_run.get("head_sha")
            trusted_sha = sha if isinstance(sha, str) and sha else None
            repo_obj = workflow_run.get("head_repository")
            if isinstance(repo_obj, Mapping) and isinstance(repo_obj.get("full_name"), str):
                head_repo = repo_obj["full_name"]
        if trusted_sha is None:
            raise UsageError("workflow_run event payload: at workflow_run.head_sha: expected the evaluated commit")
        if trusted_sha != meta.head_sha:
            raise UsageError(
                f"{directory}/meta.json: head_sha {meta.head_sha} is not the commit the evals workflow ran on "
                f"(workflow_run.head_sha {trusted_sha}); refusing to post results for another commit"
            )
    client = factory(actions)
    if client is None:
        raise UsageError("no GitHub token: set the `github-token` input or GITHUB_TOKEN to post results")
    posted = Posted()
    moved_on: list[str] = []
    try:
        pr_number = meta.pr_number
        if pr_number is not None:
            pull = client.get_pull(meta.repository, pr_number)
            head = pull.get("head") or {}
            pr_head = head.get("sha")
            pr_head_repo = (head.get("repo") or {}).get("full_name") if isinstance(head.get("repo"), dict) else None
            if head_repo is not None and pr_head_repo is not None and pr_head_repo != head_repo:
                raise UsageError(
                    f"PR #{pr_number} comes from {pr_head_repo!r}, but the evals ran on {head_repo!r}: "
                    "the artifact names another pull request"
                )
            if pr_head != meta.head_sha:
                if trusted_sha is None:
                    raise UsageError(
                        f"PR #{pr_number} is at {pr_head}, but the artifact holds results for {meta.head_sha}; "
                        "refusing to post them on the pull request"
                    )
                moved_on.append(
                    f"PR #{pr_number} has moved on to {str(pr_head)[:12]} since {meta.head_sha[:12]} was evaluated: "
                    "the comment was not updated (the status and check run are on the evaluated commit)"
                )
                pr_number = None
        decision = decide_exit(artifact.verdict, meta.fail_on)
        target = Target(
            repository=meta.repository,
            head_sha=meta.head_sha,
            pr_number=pr_number,
            marker_id=f"{meta.workflow}/{meta.name}" if meta.workflow else meta.name,
            check_name=f"evalward/{meta.name}",
            status_context=f"evalward/{meta.name}",
            details_url=meta.details_url if (meta.details_url or "").startswith("https://") else actions.run_url,
        )
        rendered = render_outcome(
            artifact.run,
            artifact.verdict,
            artifact.baseline,
            decision,
            name=meta.name,
            details_url=target.details_url,
            root=root or Path.cwd(),
        )
        result = publish(
            client,
            target,
            rendered.message(),
            decision,
            comment=comment or meta.comment,
            commit_status=meta.commit_status if commit_status is None else commit_status,
            check_run=meta.check_run if check_run is None else check_run,
            bot_logins=bot_logins,
        )
        posted.comment_url = result.comment_url
        posted.notes.extend(result.notes)
        posted.read_only = result.read_only
    finally:
        client.close()
    finish_log(actions, None, [*moved_on, *posted.notes], out)
    if actions.step_summary_path is not None:
        append_step_summary(actions.step_summary_path, rendered.summary)
    write_step_outputs(
        actions.output_path,
        {
            "verdict": artifact.verdict.outcome,
            "passed": passed_output(decision),
            "run-id": artifact.run.run_id,
            "regressions": str(decision.regressions),
            "results-json": str(directory / "run.json"),
            "comment-url": posted.comment_url or "",
        },
    )
    failed = bool(posted.notes)  # a GitHub refusal or failure: the poster job shows it
    out.write(f"evalward: posted the {artifact.verdict.outcome} verdict of run {artifact.run.run_id}\n")
    return CiResult(
        exit_code=EXIT_INFRASTRUCTURE if failed else EXIT_OK,
        run=artifact.run,
        verdict=artifact.verdict,
        comment_url=posted.comment_url,
        notes=[*moved_on, *posted.notes],
        artifact=directory,
    )
