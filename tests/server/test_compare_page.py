"""The compare page: two runs case by case, counted by class, filtered, searched, sorted and paged; the same
rows in a real headless Chromium."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from tests.server.conftest import make_settings
from tests.server.live import LiveServer, dashboard_client
from tests.server.runs import dice_run, t
from tests.server.test_dashboard import browser_or_skip

from evalward._server.app import create_app
from evalward.model.case_tally import CaseTally
from evalward.report.case_changes import classify, compare_rows, select_rows, word_diff
from evalward.store import open_store


def tally(passes: int, results: int = 3, errors: int = 0) -> CaseTally:
    return CaseTally(passes=passes, results=results, errors=errors, scores={})


@pytest.mark.parametrize(
    ("baseline", "candidate", "change"),
    [
        (tally(3), tally(2), "regressed"),
        (tally(1), tally(3), "improved"),
        (tally(1), tally(1), "still failing"),
        (tally(3), tally(3), "unchanged"),
        (tally(3), tally(3, errors=1), "errored"),
        (None, tally(3), "added"),
        (tally(3), None, "removed"),
    ],
)
def test_each_case_gets_one_class(baseline: CaseTally | None, candidate: CaseTally | None, change: str) -> None:
    assert classify(baseline, candidate) == change


def test_filters_keep_exactly_their_class_and_flaky_is_either_side_mixed() -> None:
    base = {("s", "a"): tally(3), ("s", "b"): tally(3), ("s", "c"): tally(0), ("s", "d"): tally(3)}
    cand = {("s", "a"): tally(0), ("s", "b"): tally(2), ("s", "c"): tally(0), ("s", "d"): tally(3)}
    rows = compare_rows(base, cand)
    assert [r.case_id for r in select_rows(rows, "regressed", "", "change")] == ["a", "b"]  # by Δ: -1 then -1/3
    assert [r.case_id for r in select_rows(rows, "flaky", "", "change")] == ["b"]
    assert [r.case_id for r in select_rows(rows, "all", "", "change")] == ["a", "b", "c", "d"]
    assert [r.case_id for r in select_rows(rows, "all", "D", "case")] == ["d"]


def test_word_diff_marks_only_the_words_that_changed() -> None:
    assert word_diff("rolled a 17 sided die", "rolled a 20 sided die") == [
        ("same", "rolled a "),
        ("del", "17"),
        ("add", "20"),
        ("same", " sided die"),
    ]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("compare")
    url = f"sqlite:///{root / 'server.db'}"
    with open_store(url) as store:
        dice_run(store, root, run_id="good", commit="1" * 40, started=t(0))
        dice_run(store, root, run_id="bad", commit="2" * 40, broken=True, started=t(10))
    yield url


@pytest.fixture
async def dash(two_runs: str) -> AsyncIterator[httpx.AsyncClient]:
    async with dashboard_client(two_runs) as http:
        yield http


async def test_the_header_counts_and_the_regressed_filter_shows_exactly_those(dash: httpx.AsyncClient) -> None:
    page = (await dash.get("/compare/good...bad")).text
    assert '<a href="?show=regressed" data-count="regressed">2 regressed</a>' in page
    regressed = (await dash.get("/compare/good...bad?show=regressed")).text
    assert regressed.count('data-change="regressed"') == 2 and 'data-change="unchanged"' not in regressed
    assert (await dash.get("/compare/good...bad?show=improved")).text.count("data-change=") == 0
    back = (await dash.get("/compare/bad...good?show=improved")).text
    assert back.count('data-change="improved"') == 2


async def test_search_sort_and_the_response_diff(dash: httpx.AsyncClient) -> None:
    page = (await dash.get("/compare/good...bad?q=17_sided")).text
    assert page.count("data-change=") == 1 and 'data-case="roll_17_sided_dice_twice"' in page
    assert '<span class="del">17</span><span class="add">20</span>' in page
    assert "<td class=num>1 of 1</td>" in page and "<td class=num>0 of 1</td>" in page and "-1.00" in page


async def test_unknown_runs_and_malformed_pairs_are_404(dash: httpx.AsyncClient) -> None:
    assert (await dash.get("/compare/good...nope")).status_code == 404
    assert (await dash.get("/compare/good")).status_code == 404


@pytest.mark.slow
def test_the_compare_page_in_headless_chromium(two_runs: str, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    driver = browser_or_skip()
    try:
        with open_store(two_runs) as store:
            app = create_app(make_settings(two_runs, public_read=True), store)
            with LiveServer(app) as server:
                driver.get(server.url + "/compare/good...bad")  # type: ignore[attr-defined]
                driver.find_element(By.CSS_SELECTOR, '#counts a[data-count="regressed"]').click()  # type: ignore[attr-defined]
                rows = driver.find_elements(By.CSS_SELECTOR, "#cases tr[data-change]")  # type: ignore[attr-defined]
                assert [r.get_attribute("data-change") for r in rows] == ["regressed", "regressed"]
                added = driver.find_element(By.CSS_SELECTOR, "pre.diff span.add")  # type: ignore[attr-defined]
                assert added.is_displayed() and added.text == "20"
                driver.save_screenshot(str(tmp_path / "compare.png"))  # type: ignore[attr-defined]
    finally:
        driver.quit()  # type: ignore[attr-defined]
    assert (tmp_path / "compare.png").stat().st_size > 10_000
