"""One case of one run in a few numbers: how its repetitions ended and its mean score per metric. The dashboard's
compare and case pages read tallies from the history's rows (`store.case_views`); `evalward compare --html` makes
them from the runs it loaded (`tally_cases`): the same numbers either way."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from evalward.model.results import CaseResult


class CaseTally(BaseModel):
    """One case of one run: how its repetitions ended and its mean score per metric."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    passes: int
    """repetitions that passed."""
    results: int
    """repetitions recorded."""
    errors: int
    """repetitions that ended in an error."""
    scores: dict[str, float | None]
    """{metric: mean of the repetitions' non-null scores} (None when none had a score)."""

    @property
    def passed(self) -> bool:
        """Every repetition passed (a case's outcome in a run, as `case_outcomes` and the flip rates count it)."""
        return self.results > 0 and self.passes == self.results

    @property
    def share(self) -> float:
        """passes / results."""
        return self.passes / self.results if self.results else 0.0


def tally_cases(cases: Iterable[CaseResult]) -> dict[tuple[str, str], CaseTally]:
    """{(eval set, case id): its tally} over a run's case results (every repetition of a case in one tally); a
    metric's mean is over the repetitions that scored it, as the history's `avg` over score rows is."""
    outcomes: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    sums: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(dict)
    for case in cases:
        key = (case.eval_set_id, case.case_id)
        counted = outcomes[key]
        counted[0] += case.status == "passed"
        counted[1] += 1
        counted[2] += case.status == "error"
        for metric in case.metric_results:
            scored = sums[key].setdefault(metric.name, [])
            if metric.score is not None:
                scored.append(metric.score)
    return {
        key: CaseTally(
            passes=passes,
            results=results,
            errors=errors,
            scores={name: (sum(v) / len(v) if v else None) for name, v in sums[key].items()},
        )
        for key, (passes, results, errors) in outcomes.items()
    }
