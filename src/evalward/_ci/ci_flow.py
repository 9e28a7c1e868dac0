"""`run_ci`: setup → run → store → gate → report, for the GitHub Actions event in the environment.

Mode by event (`GITHUB_EVENT_NAME` and the payload at `GITHUB_EVENT_PATH`):
1. `pull_request`: the merge-base of the PR head and its base is computed with git first — a checkout that
   cannot give it (shallow, refused, missing commits) is an error saying how to fix it, never a silent
   fallback (`store.gitinfo.resolve_merge_base`); then run, store, gate against the baseline at that
   merge-base, and report (sticky comment, commit status, check run) on `pull_request.head.sha`, not the
   merge commit. `pull_request_target` runs the same way only when the workflow opted in with
   `allow-pull-request-target: i-understand-this-runs-untrusted-code` (it gives PR code a write token and
   secrets, the "pwn request"); otherwise it is refused (exit 2) before any PR code runs.
2. `push`: run and store (the baseline of later PRs), gate against the commit before the push, and put a
   status and a check run on the pushed commit.
   `merge_group` (a merge queue's `checks_requested`): run and store the queue's temporary commit, gate it
   against the queue's base (`merge_group.base_sha`, the merge-base without git), and put the status and check
   run on `merge_group.head_sha`, the commit the queue waits for; there is no PR to comment on.
3. anything else (`workflow_dispatch`, `schedule`, a laptop): run, store, gate, report to the job summary.
With `shard: I/N` the run is one shard: stored and saved to the artifact, not gated (exit 0 unless it could
not run); `merge-shards: DIR` merges the shard artifacts found under DIR, failing closed when one is missing,
then gates and reports as above. `setup` commands run before the evals (module `setup`).

Every mode writes the job summary (≤ 1 MiB), log annotations (10 per level, then a notice), the results
artifact (`artifact`: run, verdict, baseline, HTML report, PR number + head SHA) and the step outputs.
Reporting is best effort: a read-only token (fork PRs, Dependabot) or a GitHub failure after the client's
retries (at most `GITHUB_RETRY_BUDGET_S` in all) becomes a `::warning::` and a note in the job summary, and
never changes the exit code. Whatever stops evalward before a verdict — a bad input (exit 2), a failed setup
or an unreachable database (exit 3) — still sets `verdict=error` and says why in the summary and the log.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO
from urllib.parse import quote

from evalward._ci.artifact import ArtifactMeta, merge_shard_artifacts, write_artifact
from evalward._ci.event import (
    ClientFactory,
    Mode,
    ci_context,
    default_client,
    event_mode,
    pull_request_merge_base,
    refuse_pull_request_target,
)
from evalward._ci.exit_code import decide_exit, passed_output
from evalward._ci.failure import as_reportable, report_error, report_startup_error
from evalward._ci.inputs import CiOptions
from evalward._ci.render import (
    SUMMARY_MAX_CHARS,
    Link,
    log_safe,
    print_untrusted,
    render_outcome,
    terminal_report,
)
from evalward._ci.result import CiResult, finish_log, write_step_outputs
from evalward._ci.setup import run_setup
from evalward._cli.run_cmd import open_history, write_reports
from evalward._gating import gate_run, load_policy, run_and_gate
from evalward._options.run_options import run_options_from
from evalward._pipeline import prepare, run_blocking
from evalward.errors import EXIT_OK, EvalwardError, InfrastructureError, UsageError, debug_enabled
from evalward.github.actions import ActionsEnv, append_step_summary
from evalward.github.publish import Posted, Target, publish
from evalward.model import RunContext
from evalward.redact import register_environment, url_without_credentials
from evalward.remote_history import BaselineQuery, RemoteHistory
from evalward.report.markdown import render_run_markdown
from evalward.store.gitinfo import repository_root

if TYPE_CHECKING:
    from evalward._gating import GateOutcome, RemoteSearch
    from evalward._pipeline import PreparedRun
    from evalward.gate import GatePolicy
    from evalward.model import RunResult
    from evalward.model.verdict import Verdict
    from evalward.store import BaselineSearch, Store


@dataclass
class ServerHistory:
    """With `server-url`: the run uploaded to an evalward server, whose history the gate searches."""

    search: RemoteSearch | None = None
    record_verdict: Callable[[Verdict], list[str]] | None = None
    notes: list[str] = field(default_factory=list)


def _server_history(options: CiOptions, env: Mapping[str, str], run: RunResult) -> ServerHistory:
    """Upload the run to the evalward server and gate against the server's history (see
    `evalward.remote_history`); nothing without `server-url`. An upload failure leaves the gate without a
    baseline, saying why."""

    if not options.server_url:
        return ServerHistory()
    token = env.get("EVALWARD_SERVER_TOKEN")
    if not token:
        note = "server-url is set but server-token (EVALWARD_SERVER_TOKEN) is not: the run was not uploaded"
        reason = InfrastructureError(note)

        def refused(_query: BaselineQuery) -> tuple[BaselineSearch, dict[tuple[str, str], float]]:
            raise reason

        return ServerHistory(search=refused, notes=[note])
    history = RemoteHistory(options.server_url, token)
    try:
        history.upload(run)
    except InfrastructureError as exc:
        history.close()
        failure = exc

        def unavailable(_query: BaselineQuery) -> tuple[BaselineSearch, dict[tuple[str, str], float]]:
            raise failure

        return ServerHistory(search=unavailable, notes=[str(exc)])

    def search(query: BaselineQuery) -> tuple[BaselineSearch, dict[tuple[str, str], float]]:
        return history.search_baseline(run.run_id, query)

    def record(verdict: Verdict) -> list[str]:
        try:
            history.record_verdict(verdict)
        except InfrastructureError as exc:
            return [str(exc)]
        finally:
            history.close()
        return []

    return ServerHistory(search=search, record_verdict=record)


@dataclass
class Gated:
    """What `_run_and_gate` produced: the run, and its verdict unless it is a shard."""

    run: RunResult
    outcome: GateOutcome | None
    notes: list[str] = field(default_factory=list)


def _run_and_gate(
    options: CiOptions,
    context: RunContext,
    store: Store,
    policy: GatePolicy,
    *,
    env: Mapping[str, str],
    repo_dir: Path,
    keep_run: Callable[[RunResult, Sequence[str]], None],
) -> Gated:
    """Run the evals (or merge the shards), then gate the run against its baseline: the one place where the
    run and the gate meet in `evalward ci`.

    The baseline is made by `_gating` (docs/gate.md §9): a stored run at the merge-base, re-scored under this run's
    criteria, and — for the cases no stored run covers (`options.baseline_run`) — the base side run on demand,
    interleaved with this run's cases. With `server-url`, the run is uploaded first and the server's history
    is searched; the base side then runs after the head (the server answers for a finished run).
    `keep_run` gets the run and its warnings before the gate (the artifact and report files), so a gate that
    fails still leaves the results. A shard is stored, not gated."""

    base_branch = options.base_branch or context.base_branch
    if options.merge_shards:
        run = merge_shard_artifacts(store, options.merge_shards, run_id=options.run_id)
        if context.merge_base and not run.context.merge_base:
            run = run.model_copy(update={"context": run.context.model_copy(update={"merge_base": context.merge_base})})
        keep_run(run, [])
        instrument = prepare(run_options_from(options.run, context=context)) if options.run.paths else None
        return _gate_finished(options, run, store, policy, env=env, repo_dir=repo_dir, instrument=instrument)
    prepared = _prepare(options, context)
    if options.shard or options.server_url:
        run = _run_prepared(prepared, store)
        keep_run(run, list(prepared.warnings))
        if options.shard:
            return Gated(run=run, outcome=None)
        return _gate_finished(options, run, store, policy, env=env, repo_dir=repo_dir, instrument=prepared)

    def after_run(run: RunResult) -> None:
        if run.status == "cancelled":
            raise KeyboardInterrupt
        keep_run(run, list(prepared.warnings))

    outcome = run_and_gate(
        prepared,
        store,
        policy,
        baseline_spec=options.baseline,
        base_branch=base_branch,
        baseline_run=options.baseline_run,
        repo_dir=repo_dir,
        record="ci",
        after_run=after_run,
    )
    return Gated(run=outcome.current, outcome=outcome)


def _prepare(options: CiOptions, context: RunContext) -> PreparedRun:
    if not options.run.paths:
        raise UsageError(
            "no eval files: set the `eval-paths` input (INPUT_EVAL-PATHS), EVALWARD_PATHS, pass PATHS, "
            "or put `paths` in evalward.toml"
        )
    if not options.run.agent:
        raise UsageError(
            "no agent: set the `agent` input (INPUT_AGENT), EVALWARD_AGENT, --agent, or `agent` in evalward.toml"
        )
    return prepare(run_options_from(options.run, context=context, run_id=options.run_id))


def _run_prepared(prepared: PreparedRun, store: Store) -> RunResult:
    run = run_blocking(prepared, store=store)
    if run.status == "cancelled":
        raise KeyboardInterrupt
    return run


def _gate_finished(
    options: CiOptions,
    run: RunResult,
    store: Store,
    policy: GatePolicy,
    *,
    env: Mapping[str, str],
    repo_dir: Path,
    instrument: PreparedRun | None,
) -> Gated:
    """Gate a run that has finished (merged shards, or uploaded to a server first)."""

    server = _server_history(options, env, run)
    outcome = gate_run(
        store,
        run,
        policy,
        baseline_spec=options.baseline,
        base_branch=options.base_branch or run.context.base_branch,
        repo_dir=repo_dir,
        remote=server.search,
        record="ci",
        instrument=instrument,
        baseline_run=options.baseline_run,
    )
    notes = list(server.notes)
    if server.record_verdict is not None:
        notes.extend(server.record_verdict(outcome.verdict))
    return Gated(run=run, outcome=outcome, notes=notes)


def ci_target(actions: ActionsEnv, options: CiOptions, mode: Mode) -> Target:
    """The head SHA, PR, comment marker (`{workflow}/{name}`) and check/status name (`evalward/{name}`)."""
    return Target(
        repository=actions.repository,
        head_sha=actions.head_sha,
        pr_number=actions.pr_number if mode == "pull_request" else None,
        marker_id=f"{actions.workflow}/{options.name}" if actions.workflow else options.name,
        check_name=f"evalward/{options.name}",
        status_context=f"evalward/{options.name}",
        details_url=actions.run_url,
    )


def _meta(actions: ActionsEnv, options: CiOptions, target: Target) -> ArtifactMeta:
    return ArtifactMeta(
        repository=target.repository or "unknown/unknown",
        head_sha=target.head_sha or "0000000",
        pr_number=target.pr_number,
        event_name=actions.event_name,
        workflow=actions.workflow,
        name=options.name,
        details_url=target.details_url,
        fail_on=sorted(options.fail_on),
        comment=options.comment,
        commit_status=options.commit_status,
        check_run=options.check_run,
        shard=options.shard,
    )


def report_links(actions: ActionsEnv, options: CiOptions, run: RunResult) -> list[Link]:
    """Where the full report is: the HTML report in the run's artifacts, and the dashboard with `server-url`."""
    links: list[Link] = []
    if options.results_artifact and actions.run_url:
        name = Path(options.results_artifact).name
        links.append(Link(f"Full HTML report (report.html in the {name} artifact)", f"{actions.run_url}#artifacts"))
    if options.server_url:
        base = url_without_credentials(options.server_url.rstrip("/"))
        ctx = run.context
        if ctx.pr_number is not None and ctx.repository and "/" in ctx.repository:
            owner, _, name = ctx.repository.partition("/")
            pull = f"{base}/repos/{quote(owner, safe='')}/{quote(name, safe='')}/pulls/{ctx.pr_number}"
            links.append(Link("This pull request on the evalward dashboard", pull))
        links.append(Link("Run on the evalward dashboard", f"{base}/runs/{quote(run.run_id, safe='')}"))
    return links


def run_ci(
    options: CiOptions,
    *,
    env: Mapping[str, str],
    out: TextIO | None = None,
    err: TextIO | None = None,
    client_factory: ClientFactory | None = None,
    root: Path | None = None,
) -> CiResult:
    """Setup → run → store → gate → report for the event in `env` (see the module docstring); the history
    database is closed afterwards whatever happened. `root` is the repository folder annotation paths are
    relative to (default: the git checkout around the working directory, else GITHUB_WORKSPACE)."""
    opened: list[Store] = []
    try:
        return _run_ci(options, env=env, out=out, err=err, client_factory=client_factory, root=root, opened=opened)
    except Exception as exc:
        # Before the event could be read (or while a report failed): still `verdict=error` and a summary.
        if not isinstance(exc, EvalwardError) and debug_enabled():
            traceback.print_exception(exc, file=err or sys.stderr)
        return report_startup_error(exc, env, name=options.name, out=out, err=err)
    finally:
        for store in opened:
            store.close()


def _run_ci(
    options: CiOptions,
    *,
    env: Mapping[str, str],
    out: TextIO | None,
    err: TextIO | None,
    client_factory: ClientFactory | None,
    root: Path | None,
    opened: list[Store],
) -> CiResult:
    out = out or sys.stdout
    err = err or sys.stderr
    factory = client_factory or default_client
    _mask_secrets(env, out)
    repo_dir = Path.cwd()
    try:
        actions = ActionsEnv.from_environ(env)
    except EvalwardError as exc:
        return report_startup_error(exc, env, name=options.name, out=out, err=err)
    repository = repository_root(repo_dir)
    root = root or repository or Path(env.get("GITHUB_WORKSPACE") or repo_dir)
    mode = event_mode(actions)
    target = ci_target(actions, options, mode)
    artifact_dir = Path(options.results_artifact) if options.results_artifact else None
    paths: dict[str, Path | None] = {"run": None}

    def keep_run(run: RunResult, warnings: Sequence[str]) -> None:
        for warning in warnings:
            err.write(f"warning: {log_safe(warning)}\n")
        if artifact_dir is not None:
            paths["run"] = write_artifact(artifact_dir, _meta(actions, options, target), run, None, None)
        write_reports(run, json_path=options.json_path, junit_path=options.junit_path, markdown_path=None)

    try:
        refuse_pull_request_target(actions, options)
        merge_base = None
        if mode == "pull_request" and not (options.shard and not options.merge_shards):
            merge_base = pull_request_merge_base(actions, options, repo_dir)
        if options.setup:
            # The commands are a child process: the process environment, with the action's variables over it.
            run_setup(options.setup, env={**os.environ, **env}, cwd=repo_dir, out=out, repository=repository)
        context = ci_context(options, actions, env, merge_base=merge_base)
        overrides = {"strict": True} if "inconclusive" in options.fail_on else {}
        policy = load_policy(options.gate_settings, config_path=options.config_path, overrides=overrides)
        store = open_history(options.db_url)
        opened.append(store)
        gated = _run_and_gate(options, context, store, policy, env=env, repo_dir=repo_dir, keep_run=keep_run)

        run, outcome = gated.run, gated.outcome
        if outcome is None:
            return _finish_shard(run, actions, options, paths["run"], out)
        verdict = outcome.verdict
        decision = decide_exit(verdict, options.fail_on)
        print_untrusted(terminal_report(run, outcome), out)
        rendered = render_outcome(
            run,
            verdict,
            outcome.baseline,
            decision,
            name=options.name,
            details_url=target.details_url,
            root=root,
            cwd=repo_dir,
            links=report_links(actions, options, run),
        )
        if options.markdown_path:
            Path(options.markdown_path).parent.mkdir(parents=True, exist_ok=True)
            Path(options.markdown_path).write_text(rendered.comment_body.split("\n", 1)[1], encoding="utf-8")
        if artifact_dir is not None:
            paths["run"] = write_artifact(artifact_dir, _meta(actions, options, target), run, verdict, outcome.baseline)
        if actions.step_summary_path is not None:
            append_step_summary(actions.step_summary_path, rendered.summary)

        posted = Posted()
        if mode in ("pull_request", "push", "merge_group") and target.repository and target.head_sha:
            client = factory(actions)
            try:
                posted = publish(
                    client,
                    target,
                    rendered.message(),
                    decision,
                    comment=options.comment,
                    commit_status=options.commit_status,
                    check_run=options.check_run,
                    bot_logins=options.comment_authors,
                )
            finally:
                if client is not None:
                    client.close()
        posted.notes.extend(gated.notes)
        finish_log(actions, rendered, posted.notes, out)
        out.write(f"evalward: gate {verdict.outcome}; run id {run.run_id}; exit {decision.exit_code}\n")
        write_step_outputs(
            actions.output_path,
            {
                "verdict": verdict.outcome,
                "passed": passed_output(decision),
                "run-id": run.run_id,
                "regressions": str(decision.regressions),
                "results-json": str(paths["run"]) if paths["run"] else "",
                "comment-url": posted.comment_url or "",
            },
        )
        return CiResult(
            exit_code=decision.exit_code,
            run=run,
            verdict=verdict,
            comment_url=posted.comment_url,
            notes=posted.notes,
            artifact=artifact_dir,
        )
    except Exception as exc:
        # A crash anywhere (running, gating, reporting) still ends as `verdict=error` with a job summary and
        # an error status: never as exit 1, which means "criteria not met".
        if not isinstance(exc, EvalwardError) and debug_enabled():
            traceback.print_exception(exc, file=err)
        return report_error(as_reportable(exc), actions, options, target, factory, out, err)


def _finish_shard(
    run: RunResult, actions: ActionsEnv, options: CiOptions, run_path: Path | None, out: TextIO
) -> CiResult:
    """A shard is stored and saved, not gated: the merge-and-gate job decides."""

    print_untrusted(terminal_report(run, None), out)
    if actions.step_summary_path is not None:
        title = f"evalward: {options.name}, shard {options.shard}"
        append_step_summary(
            actions.step_summary_path, render_run_markdown(run, title=title, max_chars=SUMMARY_MAX_CHARS)
        )
    out.write(f"evalward: shard {options.shard} stored as run {run.run_id}; the merge job gates it\n")
    write_step_outputs(
        actions.output_path,
        {
            "verdict": "",
            "passed": passed_output(None, gated=False),
            "run-id": run.run_id,
            "regressions": "0",
            "results-json": str(run_path) if run_path else "",
        },
    )
    return CiResult(exit_code=EXIT_OK, run=run, artifact=Path(options.results_artifact or "."))


def _mask_secrets(env: Mapping[str, str], out: TextIO) -> None:
    """Make the event's environment's secrets known to the redactor, and have the runner mask the ones it
    cannot know: a password inside a URL (the runner masks a secret's whole value, not a part of it)."""
    for secret in register_environment(env):
        if secret.name.endswith(" password") and "\n" not in secret.value:
            out.write(f"::add-mask::{secret.value}\n")
