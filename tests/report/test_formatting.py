"""One rounding rule for shares, in every report and the dashboard: a share between 0 and 1 never reads as a
whole or as nothing."""

from __future__ import annotations

import pytest

from evalward.report.formatting import percent


@pytest.mark.parametrize(
    ("passes", "total", "shown"),
    [
        (0, 2000, "0.0%"),
        (2000, 2000, "100.0%"),
        (1, 2, "50.0%"),
        (1998, 2000, "99.9%"),
        (19_999, 20_000, ">99.9%"),  # 99.995% rounds to 100.0%
        (1, 20_000, "<0.1%"),  # 0.005% rounds to 0.0%
        (1999, 2000, ">99.9%"),  # 99.95% rounds up too
    ],
)
def test_a_share_short_of_all_never_reads_as_all(passes: int, total: int, shown: str) -> None:
    assert percent(passes / total) == shown


def test_no_share_is_a_dash() -> None:
    assert percent(None) == "—"
