"""Run the base side on demand: the merge-base's agent on the current run's cases, in this job (docs/gate.md §9).

When no stored run covers a case (a first pull request, a fresh history, a case whose inputs changed),
the baseline is made here: the merge-base is checked out in a separate git worktree, its agent is started
there, and it runs on the *current* eval sets — the instrument is this run's, the agent is the base's.
Its run is stored (commit = the merge-base, branch = the base branch), so the next pull request from the
same merge-base finds it.

- Which agent: the base checkout's own `evalward.toml` (or `[tool.evalward]`) `agent`, when it names one —
  a pull request that changes the target is judged against the target the base had — else this run's
  target string, resolved in the base checkout.
- How: Python, ADK, LangGraph and `openai:` targets load in-process, and the head's copy of the same
  module names is already imported, so the base side runs in its own interpreter
  (`runners/jsonl_server.py`) behind the `cmd:` protocol; `cmd:` targets start in the base checkout.
  An HTTP target is a running service whose base version evalward cannot start: no base side.
- Checked before anything runs (`probe`): an agent that cannot start is reported with its error, and the
  gate then has no baseline for those cases (never a silent pass).
"""

from __future__ import annotations

import contextlib
import json
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evalward._pipeline import PreparedRun
from evalward.config import find_config, load_config
from evalward.errors import EvalFileError, InfrastructureError
from evalward.identifiers import is_sha
from evalward.loaders.selection import keep_cases
from evalward.model import AgentOutput, AgentRequest, AgentTarget, EvalSet, RunContext
from evalward.model.cases import CaseKey
from evalward.runners import make_agent
from evalward.runners.process import SubprocessAgent
from evalward.store.gitinfo import git

if TYPE_CHECKING:
    from contextlib import ExitStack

    from evalward._gating.flow import BaselinePlan
    from evalward.runners.agent_contract import Agent

BaselineRunMode = Literal["missing", "always", "never"]
"""`missing` (default): run the base side for the cases no stored run covers; `always`: for every case (a
fresh, same-job baseline, which also cancels provider drift); `never`: stored runs only."""

BASELINE_RUN_MODES: tuple[BaselineRunMode, ...] = ("missing", "always", "never")

PROBE_TIMEOUT_S = 120.0
"""How long the base agent may take to load in the probe."""


class BaseSideUnavailable(Exception):
    """The base side cannot be run; the message says why, for the verdict."""


@dataclass(frozen=True)
class BaseCheckout:
    """The merge-base checked out beside the current checkout."""

    sha: str
    root: Path
    """The worktree's top level."""
    cwd: Path
    """The folder matching the current working directory (the same path relative to the repository root)."""


def _git(repo: Path, *args: str, timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
    """git in `repo`, trusting the checkout as `store.gitinfo` does (on GitHub it belongs to the runner's user
    while the action runs as root, actions/runner#2033); the worktree is evalward's own."""
    try:
        return git(repo, *args, timeout_s=timeout)
    except InfrastructureError as exc:
        raise BaseSideUnavailable(f"git {args[0]} could not run: {exc}") from exc


@contextlib.contextmanager
def base_checkout(repo_dir: Path, sha: str) -> Iterator[BaseCheckout]:
    """A detached worktree of `sha` for the duration; removed afterwards (also on errors)."""
    # `re.match` with `$` accepted a SHA followed by a newline; `is_sha` matches the whole string.
    if not is_sha(sha):
        raise BaseSideUnavailable(f"the merge-base {sha[:80]!r} is not a full commit SHA")
    top = _git(repo_dir, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise BaseSideUnavailable(f"{repo_dir} is not a git checkout: {top.stderr.strip()[-300:]}")
    root = Path(top.stdout.strip())
    relative = Path(repo_dir).resolve().relative_to(root.resolve())
    with tempfile.TemporaryDirectory(prefix="evalward-base-") as tmp:
        worktree = Path(tmp) / "base"
        added = _git(root, "worktree", "add", "--detach", "--quiet", "--end-of-options", str(worktree), sha)
        if added.returncode != 0:
            raise BaseSideUnavailable(
                f"could not check out the merge-base {sha[:12]}: {added.stderr.strip()[-500:]}"
                " (with actions/checkout, `fetch-depth: 0` fetches the history the merge-base needs)"
            )
        try:
            yield BaseCheckout(sha=sha, root=worktree, cwd=worktree / relative)
        finally:
            _git(root, "worktree", "remove", "--force", str(worktree))
            _git(root, "worktree", "prune")


def base_agent_target(checkout: BaseCheckout, head_target: str) -> str:
    """The base checkout's configured agent, else the head's target string (module docstring)."""
    found = find_config(checkout.cwd)
    if found is None:
        return head_target
    try:
        settings = load_config(found).settings
    except EvalFileError:
        return head_target  # the base's settings do not parse: its agent is still most likely this one
    return settings.run.agent or head_target


def _in_process(target: str) -> bool:
    return not target.startswith(("cmd:", "http://", "https://", "replay:"))


def _server_command(target: str, options: Mapping[str, Any], *, check: bool = False) -> list[str]:
    command = [sys.executable, "-m", "evalward.runners.jsonl_server", target]
    if options:
        command += ["--options", json.dumps(dict(options), default=str)]
    if check:
        command.append("--check")
    return command


def probe(target: str, cwd: Path, options: Mapping[str, Any]) -> None:
    """Raise `BaseSideUnavailable` when the base agent cannot be started (module docstring)."""
    if target.startswith(("http://", "https://")):
        raise BaseSideUnavailable(
            f"the agent is an HTTP service ({target}); evalward cannot start its base version. Store a baseline "
            "from the base branch instead (run the action on pushes to it)"
        )
    if target.startswith("replay:"):
        raise BaseSideUnavailable("a replay: agent has no base side to run")
    if not cwd.is_dir():
        raise BaseSideUnavailable(f"the base commit has no folder {cwd.name!r} (the working directory)")
    if not _in_process(target):
        return  # a cmd: agent is started by the run; a start failure shows up as errors there
    try:
        done = subprocess.run(
            _server_command(target, options, check=True),
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BaseSideUnavailable(f"the base agent {target!r} did not start: {exc}") from exc
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or [f"exit code {done.returncode}"]
        raise BaseSideUnavailable(f"the base agent did not start: {tail[0][:500]}")


class BaseSideAgent:
    """The base agent behind the JSON-lines protocol, described as the base's own target: the runner the target
    names is built (never started) in the base checkout for its `target`, so its configuration hash is the
    one that runner computes there — a changed system prompt or tool file shows as a changed configuration."""

    def __init__(self, target: str, cwd: Path, options: Mapping[str, Any], processes: int = 1) -> None:
        self._described = make_agent(target, cwd=cwd, processes=processes, openai_options=options)
        self._inner = (
            SubprocessAgent("cmd:" + shlex.join(_server_command(target, options)), cwd=cwd, processes=processes)
            if _in_process(target)
            else self._described
        )

    @property
    def target(self) -> AgentTarget:
        return self._described.target

    async def start(self) -> None:
        await self._inner.start()

    async def run_turn(self, request: AgentRequest) -> AgentOutput:
        return await self._inner.run_turn(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def cases_to_run(
    current: Sequence[tuple[CaseKey, str]], covered: set[tuple[CaseKey, str]], mode: BaselineRunMode
) -> list[CaseKey]:
    """The current cases (key, input hash) the base side must run: `always` all, `never` none, `missing` those
    no stored baseline result covers with the same input."""
    if mode == "never":
        return []
    if mode == "always":
        return [key for key, _ in current]
    return [key for key, input_hash in current if (key, input_hash) not in covered]


def select_cases(sets: Sequence[EvalSet], keys: Sequence[CaseKey]) -> list[EvalSet]:
    """Copies of `sets` holding only the cases in `keys` (sets left empty are dropped)."""
    return keep_cases(sets, keys)


def base_context(current: RunContext, merge_base: str, base_branch: str | None) -> RunContext:
    """Where the base side's run belongs: the merge-base on the base branch (the next PR's baseline)."""
    return RunContext(
        repository=current.repository,
        commit=merge_base,
        branch=base_branch,
        base_branch=base_branch,
        base_side_for=current.commit or "unknown",
    )


def base_options(options: Any, *, target: str, cwd: Path, context: RunContext) -> Any:
    """The head's `RunOptions` for the base side: its agent and folder, no shard, no run id, its context."""
    return replace(options, agent=target, agent_cwd=cwd, shard=None, run_id=None, context=context, paths=[])


def start_base_side(
    stack: ExitStack, prepared: PreparedRun, plan: BaselinePlan, *, base_branch: str | None, repo_dir: Path
) -> tuple[PreparedRun, Agent] | None:
    """Check out the merge-base and prepare its agent for `plan.base_side_cases`; None (and `plan.problem`) when
    there is nothing to run or it cannot run."""
    if not plan.base_side_cases or plan.merge_base is None:
        return None
    try:
        checkout = stack.enter_context(base_checkout(repo_dir, plan.merge_base))
        options = prepared.options
        target = base_agent_target(checkout, options.agent)
        agent_options = dict(options.agent_options or {})
        probe(target, checkout.cwd, agent_options)
    except BaseSideUnavailable as exc:
        plan.problem = str(exc)
        return None
    sets = select_cases(prepared.sets, plan.base_side_cases)
    context = base_context(options.context, plan.merge_base, base_branch)
    base_prepared = PreparedRun(
        options=base_options(options, target=target, cwd=checkout.cwd, context=context),
        sets=sets,
        warnings=[],
        judges=prepared.judges,
    )
    agent = BaseSideAgent(target, checkout.cwd, agent_options, processes=max(1, options.agent_processes))
    return base_prepared, agent
