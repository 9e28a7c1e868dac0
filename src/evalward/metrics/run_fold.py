"""A run's summary folded case by case (`RunFold`): each case's metric parts kept in compact columns as the case
finishes, while other agents work, and combined at the run's end into what `aggregate.summarize_run` gives over
the same results, without holding the results (a large run hands them to its database and temporary files).
The formulas are `aggregate`'s; this module is how a run keeps what they need: ~13 bytes a case and metric.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import compress
from typing import Any, ClassVar

from evalward.metrics.aggregate import (
    MetricPart,
    PassRule,
    case_metric_parts,
    combine_metric,
    meets_threshold,
    metric_summary_from,
    results_by_metric,
    summarize_case,
)
from evalward.model import CaseResult, CaseSummary, MetricSummary
from evalward.model.records import order_by_codes


class _Counts:
    """Non-negative whole numbers in an array of the smallest item size that holds them (1 byte, until one
    needs 4, then 8): a case's repetition counts are small."""

    _NEXT: ClassVar[Mapping[str, tuple[str, int]]] = {"B": ("I", 2**8), "I": ("Q", 2**32)}
    """Item size → (the next one, the first value it cannot hold)."""

    def __init__(self) -> None:
        self.values = array("B")
        self._limit: float = 2**8
        """The first value the current item size cannot hold."""

    def append(self, value: int) -> None:
        if value >= self._limit:  # rare: checked before anything else, as a case's counts are appended
            while (step := self._NEXT.get(self.values.typecode)) is not None and value >= step[1]:
                self.values = array(step[0], self.values)
            step = self._NEXT.get(self.values.typecode)
            self._limit = step[1] if step is not None else float("inf")
        self.values.append(value)

    def __getitem__(self, index: int) -> int:
        return self.values[index]


class _Thresholds:
    """Each slot's threshold as a one-byte index into the few distinct thresholds a metric has (its
    criterion's, usually one), as plain floats once there are too many distinct ones."""

    def __init__(self) -> None:
        self._codes: bytearray | array[float] = bytearray()
        self._distinct: list[float] = []
        self._known: dict[float | str, int] = {}

    def append(self, value: float) -> None:
        if isinstance(self._codes, array):
            self._codes.append(value)
            return
        # Zeros and NaN by their bits: -0.0 == 0.0 would give back the other zero.
        known: float | str = value.hex() if value == 0.0 or value != value else value
        code = self._known.get(known)
        if code is None:
            if len(self._distinct) == 256:
                self._codes = array("d", (self._distinct[c] for c in self._codes))
                self._codes.append(value)
                return
            code = self._known[known] = len(self._distinct)
            self._distinct.append(value)
        self._codes.append(code)

    def reader(self) -> Callable[[int], float]:
        """The threshold of a slot, as a function with its storage looked up once (a run's end reads every slot)."""
        codes = self._codes
        if isinstance(codes, array):
            return codes.__getitem__
        distinct = self._distinct
        return lambda index: distinct[codes[index]]


class _MetricColumn:
    """One metric's `MetricPart`s, one slot per case in the order cases were added: ~13 bytes per case (flags,
    a threshold index, the case mean, three small counts) instead of a `MetricPart` object (a run of a million
    cases keeps one slot per case and metric)."""

    _PRESENT, _HIGHER, _ERRORED, _ALL_PASSED, _HAS_THRESHOLD, _HAS_MEAN = (1, 2, 4, 8, 16, 32)

    def __init__(self) -> None:
        self.flags = bytearray()
        self.thresholds = _Thresholds()
        self.means = array("d")
        self.scored, self.gated, self.passed = _Counts(), _Counts(), _Counts()
        # Sparse: only an evaluator returning labels has any, and a label metric has no mean to keep instead.
        self.labels: dict[int, tuple[str, ...]] = {}

    def put(self, slot: int, part: MetricPart | None) -> None:
        while len(self.flags) < slot:
            self.put(len(self.flags), None)
        if part is None:
            self.flags.append(0)
            self.thresholds.append(0.0)
            self.means.append(0.0)
            for counts in (self.scored, self.gated, self.passed):
                counts.append(0)
            return
        flags = self._PRESENT
        flags |= self._HIGHER if part.higher_is_better else 0
        flags |= self._ERRORED if part.errored else 0
        flags |= self._ALL_PASSED if part.all_scored_passed else 0
        flags |= self._HAS_THRESHOLD if part.threshold is not None else 0
        flags |= self._HAS_MEAN if part.case_mean is not None else 0
        self.flags.append(flags)
        self.thresholds.append(part.threshold if part.threshold is not None else 0.0)
        self.means.append(part.case_mean if part.case_mean is not None else 0.0)
        self.scored.append(part.n_scored)
        self.gated.append(part.n_gated)
        self.passed.append(part.n_passed)
        if part.labels:
            self.labels[slot] = part.labels

    def parts(self, slots: Iterable[int]) -> Iterator[MetricPart]:
        """The parts of `slots`, in that order, skipping slots without one: `get` for each, with what every
        slot needs looked up once (a run's end reads every case's part of every metric, while it waits)."""
        flags, means, labels = self.flags, self.means, self.labels
        scored, gated, passed = self.scored.values, self.gated.values, self.passed.values
        threshold_at = self.thresholds.reader()
        present, higher, errored, all_passed = self._PRESENT, self._HIGHER, self._ERRORED, self._ALL_PASSED
        has_threshold, has_mean = self._HAS_THRESHOLD, self._HAS_MEAN
        new, count = tuple.__new__, len(flags)
        for slot in slots:
            found = flags[slot] if slot < count else 0
            if not found & present:
                continue
            yield new(
                MetricPart,
                (
                    threshold_at(slot) if found & has_threshold else None,
                    found & higher != 0,
                    found & errored != 0,
                    means[slot] if found & has_mean else None,
                    found & all_passed != 0,
                    scored[slot],
                    gated[slot],
                    passed[slot],
                    labels.get(slot, ()) if labels else (),
                ),
            )

    def get(self, slot: int) -> MetricPart | None:
        """The part of `slot`, None when it has none."""
        return next(self.parts((slot,)), None)

    def summary_in_any_order(
        self, pass_rule: PassRule, last: Callable[[Iterable[int]], int]
    ) -> tuple[bool, MetricSummary | None]:
        """(True, `combine_metric` over this column's parts) without putting the parts in case order, or (False,
        None) when their order matters: some cases have a threshold and others take the one before theirs, or the
        direction differs between cases. `last(slots)`: the slot among `slots` whose case comes last in key order
        (its threshold is the summary's). The mean's sums are exactly rounded (`mean_interval`): any order gives
        the same. Every count is a sum over the column's arrays, every check a count of flags: at a run's end,
        while the user waits, a pass in case order over every case of every metric was ~2 µs a case and metric."""
        flags = self.flags
        present = flags.translate(_HAS[self._PRESENT])
        count = present.count(1)
        if not count:
            return True, None
        with_threshold = flags.translate(_HAS[self._HAS_THRESHOLD]).count(1)
        higher_count = flags.translate(_HAS[self._HIGHER]).count(1)
        if with_threshold not in (0, count) or higher_count not in (0, count):
            return False, None
        higher = higher_count == count
        with_mean = flags.translate(_HAS[self._HAS_MEAN])
        case_means = array("d", compress(self.means, with_mean))
        threshold: float | None = None
        if with_threshold:
            threshold_at = self.thresholds.reader()
            threshold = threshold_at(last(compress(range(len(flags)), present)))
            if pass_rule == "mean_over_runs":
                means = self.means
                all_ok = all(
                    meets_threshold(means[slot], threshold_at(slot), higher)
                    for slot in compress(range(len(flags)), with_mean)
                )
            else:
                all_ok = not flags.translate(_MEAN_NOT_ALL_PASSED).count(1)
        else:
            gated, passed = self.gated.values, self.passed.values
            all_ok = all(passed[slot] == gated[slot] for slot in compress(range(len(flags)), with_mean))
        labels: Counter[str] = Counter()
        for slot_labels in self.labels.values():
            labels.update(slot_labels)
        return True, metric_summary_from(
            case_means,
            threshold=threshold,
            higher=higher,
            errored=flags.translate(_HAS[self._ERRORED]).count(1) > 0,
            all_ok=all_ok,
            counts=(sum(self.scored.values), sum(self.gated.values), sum(self.passed.values)),
            labels=labels,
        )


_HAS = {bit: bytes(1 if flags & bit else 0 for flags in range(256)) for bit in (1, 2, 4, 8, 16, 32)}
"""`bytes.translate` tables: a `_MetricColumn` flags byte → 1 when it has the flag (the key), else 0."""
_MEAN_NOT_ALL_PASSED = bytes(
    1 if flags & _MetricColumn._HAS_MEAN and not flags & _MetricColumn._ALL_PASSED else 0 for flags in range(256)
)
"""The same: a slot with a mean whose scored repetitions did not all pass."""


class RunFold:
    """`summarize_run`, one case at a time: cases are added as their repetitions complete, in any order, and
    `metric_summaries()` equals `summarize_run(...).summary` over the same results — the metrics in the
    order they first appear among the cases sorted by key, each combined over the cases in key order —
    without holding the results (a large run hands them to the database and its temporary files).

    A case's key is `(eval_set_id, case_id)` unless the caller gives one that sorts the same way: a run gives
    each case's rank in key order (`evalward.case_keys`), kept in an array at 8 bytes a case."""

    def __init__(self, *, repetitions: int, pass_rule: PassRule) -> None:
        self.repetitions = repetitions
        self.pass_rule = pass_rule
        self._case_keys: array[int] | list[Any] = array("q")
        self._columns: dict[str, _MetricColumn] = {}
        self._first_seen: dict[str, tuple[Any, int]] = {}
        self.all_passed = True

    def add(self, runs: Sequence[CaseResult], key: Any = None) -> CaseSummary:
        """Fold one case's results (all its repetitions, sorted by key); return its summary. `key` orders the
        case among the others (class docstring); by default its (eval set id, case id)."""
        by_name = results_by_metric(runs)  # grouped once, for the summary and the parts
        parts = case_metric_parts(runs, by_name)
        summary = summarize_case(
            runs, repetitions=self.repetitions, pass_rule=self.pass_rule, by_name=by_name, parts=parts
        )
        key = (runs[0].eval_set_id, runs[0].case_id) if key is None else key
        slot = len(self._case_keys)
        if isinstance(self._case_keys, array) and not isinstance(key, int):
            self._case_keys = list(self._case_keys)
        self._case_keys.append(key)
        for position, (name, part) in enumerate(parts.items()):
            column = self._columns.get(name)
            if column is None:
                column = self._columns[name] = _MetricColumn()
            column.put(slot, part)
            seen = self._first_seen.get(name)
            if seen is None or (key, position) < seen:
                self._first_seen[name] = (key, position)
        self.all_passed = self.all_passed and summary.passed
        return summary

    def add_in_key_order(self, results: Iterable[CaseResult]) -> Iterator[CaseSummary]:
        """Fold `results`, given in key order (each case's repetitions together), case by case; yield each
        case's summary as it is folded. One pass, one case's results held at a time (a stored run read back
        from its temporary file)."""
        group: list[CaseResult] = []
        for result in results:
            if group and (group[0].eval_set_id, group[0].case_id) != (result.eval_set_id, result.case_id):
                yield self.add(group)
                group = []
            group.append(result)
        if group:
            yield self.add(group)

    @property
    def cases(self) -> int:
        return len(self._case_keys)

    @property
    def passed(self) -> bool:
        """Every case added passed (and there was one)."""
        return bool(self._case_keys) and self.all_passed

    def metric_summaries(self) -> dict[str, MetricSummary]:
        keys = self._case_keys
        order: Sequence[int] | None = None  # the slots in key order, sorted only for a metric that needs it

        def last(slots: Iterable[int]) -> int:
            return max(slots, key=keys.__getitem__)

        summary: dict[str, MetricSummary] = {}
        for name in sorted(self._first_seen, key=self._first_seen.__getitem__):
            column = self._columns[name]
            done, metric_summary = column.summary_in_any_order(self.pass_rule, last)
            if not done:
                if order is None:
                    order = (
                        order_by_codes(keys)
                        if isinstance(keys, array)
                        else sorted(range(len(keys)), key=keys.__getitem__)
                    )
                metric_summary = combine_metric(column.parts(order), pass_rule=self.pass_rule)
            if metric_summary is not None:
                summary[name] = metric_summary
        return summary
