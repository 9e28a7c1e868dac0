"""A stored run's instrument, loaded again from its eval files (for `evalward gate` on a finished run).

Re-scoring a baseline and running the base side need the current run's eval sets — cases, expectations,
criteria — not only its results. `evalward ci` has them in hand; `evalward gate --run ID` reads them back
from the paths the run recorded, and uses them only when every case is still what the run scored (the
recorded content hashes match), with the criteria the run recorded. Otherwise it says why, and the gate
falls back to stored baselines as recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evalward._pipeline import PreparedRun, RunOptions, prepare, validate_criteria
from evalward.errors import EvalwardError
from evalward.model import MetricSpec, RunResult
from evalward.model.cases import keep_ids

if TYPE_CHECKING:
    from evalward.judging.judge_config import JudgeConfig


@dataclass
class LoadedInstrument:
    prepared: PreparedRun | None
    problem: str | None = None


def _without_judge_identity(spec: MetricSpec) -> MetricSpec:
    """A recorded criterion as written (the run adds `judge: {model, prompt}` to judged ones when it records)."""
    if "judge" not in spec.options:
        return spec
    return spec.model_copy(update={"options": {k: v for k, v in spec.options.items() if k != "judge"}})


def load_instrument(run: RunResult, *, root: Path | None = None, judge: JudgeConfig | None = None) -> LoadedInstrument:
    """The run's eval sets from its recorded paths, checked against its recorded content (module docstring)."""
    base = root or Path.cwd()
    paths = [info.path for info in run.eval_sets if info.path]
    if not paths or len(paths) != len(run.eval_sets):
        return LoadedInstrument(None, "the run did not record where every eval set came from")
    missing = [p for p in paths if not (base / p).exists()]
    if missing:
        return LoadedInstrument(None, f"its eval files are not here any more: {', '.join(missing[:3])}")
    agent = run.agent.target if run.agent is not None else ""
    options = RunOptions(
        paths=[str(base / p) for p in dict.fromkeys(paths)],
        agent=agent,
        repeat=max(1, run.repetitions),
        pass_rule=run.pass_rule,
        context=run.context,
        agent_cwd=base,
        judge=judge,
    )
    try:
        prepared = prepare(options)
    except EvalwardError as exc:
        return LoadedInstrument(None, f"its eval files no longer load ({exc})")
    recorded = {info.eval_set_id: info for info in run.eval_sets}
    for eval_set in prepared.sets:
        info = recorded.get(eval_set.eval_set_id)
        if info is None and run.case_selection:
            continue  # none of its cases was selected
        if info is None:
            return LoadedInstrument(None, f"eval set {eval_set.eval_set_id!r} was not part of the run")
        if run.case_selection:  # the run ran selected cases (`--case`, `--sample`, FILE:IDS): those again
            eval_set.cases = keep_ids(eval_set.cases, info.case_hashes.__contains__)
        hashes = eval_set.case_hashes()  # kept per case: no case is read back to be compared
        changed = [i for i in eval_set.case_ids() if info.case_hashes.get(i) != hashes[i]]
        if changed:
            return LoadedInstrument(
                None, f"eval set {eval_set.eval_set_id!r} changed since the run (e.g. case {changed[0]!r})"
            )
        eval_set.criteria = eval_set.criteria.model_copy(
            update={"metrics": [_without_judge_identity(spec) for spec in info.criteria]}
        )

    sets = [s for s in prepared.sets if s.eval_set_id in recorded]
    try:
        judges = validate_criteria(sets, judge)
    except EvalwardError as exc:
        return LoadedInstrument(None, f"its criteria cannot be scored here ({exc})")
    return LoadedInstrument(PreparedRun(options=options, sets=sets, warnings=list(prepared.warnings), judges=judges))
