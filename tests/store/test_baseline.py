"""Baseline selection over a real git history: merge-base, nearest ancestor, none, refusals.

History built with `git init` (first parent on the left):

    main:     m1 ── m2 ── m3 ── m4 ── m5
                            \\
    feature:                 f1 ── f2      (PR head f2; merge-base with main = m3)
"""

from __future__ import annotations

import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
from store_factories import T0, make_case, make_run

from evalward.errors import GateInputError
from evalward.model import RunResult
from evalward.store import (
    Store,
    git_first_parent_ancestors,
    git_merge_base,
    search_baseline,
    select_baseline,
)


def _git(repo: Path, *args: str) -> str:
    completed = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return completed.stdout.strip()


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    repo = tmp_path_factory.mktemp("repo")
    _git(repo, "init", "-q", "-b", "main")
    shas: dict[str, str] = {"repo": str(repo)}

    def commit(name: str) -> None:
        (repo / f"{name}.txt").write_text(name)
        _git(repo, "add", f"{name}.txt")
        _git(repo, "commit", "-q", "-m", name)
        shas[name] = _git(repo, "rev-parse", "HEAD")

    for name in ("m1", "m2", "m3"):
        commit(name)
    _git(repo, "checkout", "-q", "-b", "feature")
    commit("f1")
    commit("f2")
    _git(repo, "checkout", "-q", "main")
    commit("m4")
    commit("m5")
    return shas


def _stored(store: Store, run_id: str, commit: str, *, hours: int = 0, **kwargs: object) -> RunResult:
    status = kwargs.pop("status", "complete")
    run = make_run(run_id, commit=commit, started=T0 + timedelta(hours=hours), **kwargs)  # type: ignore[arg-type]
    cases = [make_case("a"), make_case("b")]
    store.begin_run(run, [c.key for c in cases])
    final = run.model_copy(
        update={"status": status, "passed": True, "cases": cases, "finished_at": T0 + timedelta(hours=hours, minutes=5)}
    )
    store.finish_run(final)
    return final


def _current(history: dict[str, str], **kwargs: object) -> RunResult:
    return make_run("pr-run", commit=history["f2"], branch="feature", **kwargs)  # type: ignore[arg-type]


def _inputs(history: dict[str, str]) -> tuple[str, list[str]]:
    repo = history["repo"]
    merge_base = git_merge_base(repo, history["f2"], "main")
    assert merge_base is not None
    return merge_base, git_first_parent_ancestors(repo, merge_base)


def test_git_helpers_find_the_merge_base_and_its_first_parent_ancestors(history: dict[str, str]) -> None:
    repo = history["repo"]
    assert git_merge_base(repo, history["f2"], "main") == history["m3"]
    assert git_first_parent_ancestors(repo, history["m3"]) == [history["m2"], history["m1"]]
    assert git_first_parent_ancestors(repo, history["m5"], limit=2) == [history["m4"], history["m3"]]
    assert git_first_parent_ancestors(repo, history["m1"]) == []
    assert git_merge_base(repo, history["f2"], "no-such-branch") is None
    assert git_first_parent_ancestors(repo, "0" * 40) == []


def test_auto_picks_the_newest_comparable_run_at_the_merge_base(store: Store, history: dict[str, str]) -> None:
    merge_base, ancestors = _inputs(history)
    _stored(store, "at-m3-old", history["m3"], hours=1)
    _stored(store, "at-m3-new", history["m3"], hours=2)
    _stored(store, "at-m5-latest", history["m5"], hours=9)  # newer, but not at the merge-base: never chosen
    _stored(store, "at-m1", history["m1"], hours=0)

    choice = select_baseline(
        store, "auto", current=_current(history), base_branch="main", merge_base=merge_base, ancestors=ancestors
    )

    assert choice is not None
    assert choice.run.run_id == "at-m3-new"
    assert choice.how == f"merge-base {history['m3'][:7]} on main"
    assert choice.commit == history["m3"]
    assert choice.notes == []


def test_auto_falls_back_to_the_nearest_first_parent_ancestor(store: Store, history: dict[str, str]) -> None:
    merge_base, ancestors = _inputs(history)
    _stored(store, "at-m1", history["m1"])
    _stored(store, "at-f1", history["f1"], branch="feature")  # not on the base branch's history

    choice = select_baseline(
        store, "auto", current=_current(history), base_branch="main", merge_base=merge_base, ancestors=ancestors
    )

    assert choice is not None
    # m3 -> m2 -> m1: two commits back.
    assert choice.run.run_id == "at-m1"
    assert (
        choice.how
        == f"ancestor 2 commits back from the merge-base {history['m3'][:7]} on main (at {history['m1'][:7]})"
    )


def test_auto_without_any_run_on_the_history_is_none(store: Store, history: dict[str, str]) -> None:
    merge_base, ancestors = _inputs(history)
    _stored(store, "at-m5", history["m5"])
    _stored(store, "at-f2", history["f2"], branch="feature")

    search = search_baseline(
        store, "auto", current=_current(history), base_branch="main", merge_base=merge_base, ancestors=ancestors
    )

    assert search.choice is None
    assert search.searched == [
        f"no comparable complete run at the merge-base {history['m3'][:7]} on main",
        "none at its 2 nearest first-parent ancestors either",
    ]
    assert select_baseline(store, "auto", current=_current(history), base_branch="main", merge_base=None) is None


def test_auto_refuses_unfinished_and_partial_runs_and_says_why(store: Store, history: dict[str, str]) -> None:
    merge_base, ancestors = _inputs(history)
    _stored(store, "still-running", history["m3"], hours=4, status="running")
    _stored(store, "shard-only", history["m3"], hours=3, shard=(1, 2))
    _stored(store, "pr-branch", history["m3"], hours=2, branch="feature")
    _stored(store, "good-at-m2", history["m2"], hours=1)

    search = search_baseline(
        store, "auto", current=_current(history), base_branch="main", merge_base=merge_base, ancestors=ancestors
    )

    assert search.choice is not None
    assert search.choice.run.run_id == "good-at-m2"
    assert {r.run_id: r.reason for r in search.refused} == {
        "still-running": "it is running, not complete",
        "shard-only": "it is only shard 1/2 (merge the shards first)",
        "pr-branch": "it ran on branch 'feature', not the base branch 'main'",
    }
    assert search.choice.refused == search.refused


def test_other_criteria_are_the_instrument_and_never_refuse_a_baseline(store: Store, history: dict[str, str]) -> None:
    # a loosened threshold changes how outputs are scored, not what the agent did: the caller re-scores
    merge_base, ancestors = _inputs(history)
    _stored(store, "other-criteria", history["m3"], threshold=0.5)

    choice = select_baseline(
        store, "auto", current=_current(history), base_branch="main", merge_base=merge_base, ancestors=ancestors
    )

    assert choice is not None and choice.run.run_id == "other-criteria"
    assert choice.notes == [
        "measured differently: criteria of eval set 'smoke' differ (metrics, thresholds or judge options)"
    ]


def test_a_changed_agent_is_the_treatment_and_never_refuses_a_baseline(store: Store, history: dict[str, str]) -> None:
    merge_base, ancestors = _inputs(history)
    agent = make_run("x").agent
    assert agent is not None
    for hours, (run_id, changed) in enumerate(
        (("new-config", {"config_hash": "cfg-2"}), ("new-target", {"target": "agents.v2:agent"}))
    ):
        other = make_run(run_id, commit=history["m3"]).model_copy(update={"agent": agent.model_copy(update=changed)})
        cases = [make_case("a"), make_case("b")]
        store.begin_run(other, [c.key for c in cases])
        finished = T0 + timedelta(hours=hours + 1)
        store.finish_run(
            other.model_copy(update={"status": "complete", "passed": True, "cases": cases, "finished_at": finished})
        )
        choice = select_baseline(
            store, "auto", current=_current(history), base_branch="main", merge_base=merge_base, ancestors=ancestors
        )
        assert choice is not None and choice.run.run_id == run_id
        assert choice.refused == []
    assert choice.notes == ["agent target changed: agents.v2:agent → agents.support:agent"]


def test_changed_and_added_cases_are_noted_not_refused(store: Store, history: dict[str, str]) -> None:
    merge_base, _ancestors = _inputs(history)
    _stored(store, "at-m3", history["m3"])
    current = _current(history, case_ids=["a", "b", "c"])
    current.eval_sets[0].case_hashes["b"] = "hash-b-edited"

    choice = select_baseline(store, "auto", current=current, base_branch="main", merge_base=merge_base)

    assert choice is not None
    # a same, b changed (no input hashes recorded here, so content decides), c added; nothing removed.
    assert choice.notes == ["1 cases ask the same as in the baseline run; 1 with changed inputs, 1 added, 0 removed"]


def test_runs_at_one_commit_complete_each_other(store: Store, history: dict[str, str]) -> None:
    # an older run has a and b; a newer one (e.g. run on demand for a case a pull request added) has only c
    merge_base, ancestors = _inputs(history)
    _stored(store, "at-m3-ab", history["m3"], hours=1)
    newer = make_run("at-m3-c", commit=history["m3"], started=T0 + timedelta(hours=2), case_ids=["c"])
    store.begin_run(newer, [make_case("c").key])
    finished = T0 + timedelta(hours=3)
    store.finish_run(
        newer.model_copy(
            update={"status": "complete", "passed": True, "cases": [make_case("c")], "finished_at": finished}
        )
    )

    choice = select_baseline(
        store,
        "auto",
        current=_current(history, case_ids=["a", "b", "c"]),
        base_branch="main",
        merge_base=merge_base,
        ancestors=ancestors,
    )

    assert choice is not None
    assert choice.run.run_id == "at-m3-c"
    assert sorted(c.case_id for c in choice.run.cases) == ["a", "b", "c"]
    assert sorted(choice.run.eval_sets[0].case_hashes) == ["a", "b", "c"]
    assert choice.notes[-1] == "completed with cases of 1 older run(s) at the same commit: at-m3-ab"


def test_explicit_specs(store: Store, history: dict[str, str]) -> None:
    _stored(store, "at-m4", history["m4"], hours=1)
    _stored(store, "at-m5", history["m5"], hours=2)
    _stored(store, "mismatch", history["m5"], hours=3, threshold=0.1)
    current = _current(history)

    by_commit = select_baseline(
        store, f"commit:{history['m4'][:10]}", current=current, base_branch="main", merge_base=None
    )
    by_branch = select_baseline(store, "branch:main", current=current, base_branch="main", merge_base=None)
    by_id = select_baseline(store, "mismatch", current=current, base_branch="main", merge_base=None)

    assert by_commit is not None and by_commit.run.run_id == "at-m4"
    assert by_commit.how == f"explicit commit {history['m4'][:7]}"
    assert by_branch is not None and by_branch.run.run_id == "mismatch"  # newest usable on main (re-scored later)
    assert by_id is not None and by_id.how == "explicit run id"
    assert by_id.notes == [
        "measured differently: criteria of eval set 'smoke' differ (metrics, thresholds or judge options)"
    ]
    assert select_baseline(store, "none", current=current, base_branch="main", merge_base=None) is None
    with pytest.raises(GateInputError, match="--baseline latest is not supported"):
        select_baseline(store, "latest", current=current, base_branch="main", merge_base=None)
    with pytest.raises(GateInputError, match="'no-such-run' is not in the history database"):
        select_baseline(store, "no-such-run", current=current, base_branch="main", merge_base=None)
