"""Gating where there is no checkout (the daemon's API and dashboard): `repo_dir=None` means no git at all;
the merge-base the run recorded is used, and without one the verdict says why there is no baseline."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.server.runs import dice_run

from evalward._gating import gate_run
from evalward.gate import GatePolicy
from evalward.store import Store, open_store

BASE, HEAD = "a" * 40, "b" * 40


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'h.db'}")
    yield opened
    opened.close()


def test_without_a_recorded_merge_base_the_verdict_names_the_missing_checkout(store: Store, tmp_path: Path) -> None:
    dice_run(store, tmp_path, run_id="base", commit=BASE)
    current = dice_run(store, tmp_path, run_id="head", commit=HEAD, branch="pr", pr_number=7)
    outcome = gate_run(store, current, GatePolicy(), repo_dir=None)
    assert outcome.baseline is None
    assert outcome.verdict.outcome == "error"
    reasons = " ".join(f.message for f in outcome.verdict.findings)
    assert "there is no checkout here to compute it" in reasons


def test_a_recorded_merge_base_finds_the_stored_baseline_without_git(store: Store, tmp_path: Path) -> None:
    dice_run(store, tmp_path, run_id="base", commit=BASE)
    current = dice_run(store, tmp_path, run_id="head", commit=HEAD, branch="pr", pr_number=7)
    current = current.model_copy(update={"context": current.context.model_copy(update={"merge_base": BASE})})
    outcome = gate_run(store, current, GatePolicy(), repo_dir=None)
    assert outcome.baseline is not None and outcome.baseline.run_id == "base"
    # compared (the dice set's few cases cannot show non-inferiority: inconclusive, not an error)
    assert outcome.verdict.outcome == "inconclusive"
    assert outcome.verdict.baseline is not None and outcome.verdict.baseline.run_id == "base"
    assert not [f for f in outcome.verdict.findings if f.kind == "no_baseline"]
