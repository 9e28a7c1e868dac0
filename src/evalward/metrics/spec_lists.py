"""What the scoring loop works out from a list of criteria, once for all the cases that share it.

Every case of an eval set is scored with the same criteria: `EvalSet.metrics_for` returns a new list for each
case, but one holding the set's very `MetricSpec` objects. `SpecListCache` keeps what a function makes of such
a list by the identities of the specs in it, together with the specs (so an identity is never read for another
spec), for the last `size` lists: a run has one per eval set, and one per case with its own metrics.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from evalward.model import MetricSpec

T = TypeVar("T")

SPEC_LISTS_KEPT = 64
"""Lists of criteria a `SpecListCache` keeps."""


class SpecListCache(Generic[T]):
    """`make(specs)`, made once per list of spec objects (module docstring)."""

    def __init__(self, make: Callable[[Sequence[MetricSpec]], T], *, size: int = SPEC_LISTS_KEPT) -> None:
        self._make = make
        self._size = size
        self._kept: dict[tuple[int, ...], tuple[tuple[MetricSpec, ...], T]] = {}

    def __call__(self, specs: Sequence[MetricSpec]) -> T:
        key = tuple(map(id, specs))
        found = self._kept.get(key)
        if found is not None:
            return found[1]
        made = self._make(specs)
        if len(self._kept) >= self._size:
            self._kept.pop(next(iter(self._kept)), None)
        self._kept[key] = (tuple(specs), made)
        return made
