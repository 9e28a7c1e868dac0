"""Every dashboard page on a realistic history (`tests/dashboard_history.py`: 25 gated commits of `main` with two
regressions and their fixes, two pull requests of three pushes, three flaky cases, a 300-case pair of runs), as a
team would look at it: in-process for the details, then once through in a real headless Chromium with a
screenshot of each page under the test's tmp dir.

Each assertion is read off what the history stored (its verdicts, its broken cases), never a hard-coded count."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from tests import dashboard_history as fixture
from tests.dashboard_history import DashboardHistory
from tests.server.conftest import make_settings
from tests.server.live import LiveServer, dashboard_client
from tests.server.test_dashboard import browser_or_skip

from evalward._server.app import create_app
from evalward.store import open_store

BIG_CASES = 300
REPO = f"/repos/{fixture.REPOSITORY}"


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DashboardHistory]:
    root = tmp_path_factory.mktemp("dashboard-history")
    url = f"sqlite:///{root / 'history.db'}"
    with open_store(url) as store:
        built = fixture.build(store, url, root / "work", big_cases=BIG_CASES)
    yield built


@pytest.fixture
async def dash(history: DashboardHistory) -> AsyncIterator[httpx.AsyncClient]:
    async with dashboard_client(history.url) as http:
        yield http


def case_id(number: int) -> str:
    return f"albums_by_{number:02d}"


def regressed_between(history: DashboardHistory, baseline: str, candidate: str) -> list[str]:
    """The cases whose share of passing repetitions dropped, counted here from the stored runs (independently of
    the page): the regressed row set the compare page must show, flaky cases that happened to drop included."""
    shares: list[dict[str, float]] = []
    with open_store(history.url) as store:
        for run_id in (baseline, candidate):
            outcomes: dict[str, list[bool]] = {}
            for case in store.load_run(run_id).cases:
                outcomes.setdefault(case.case_id, []).append(case.status == "passed")
            shares.append({case: sum(passed) / len(passed) for case, passed in outcomes.items()})
    return sorted(case for case, share in shares[1].items() if share < shares[0].get(case, 0.0))


def test_the_history_holds_what_the_pages_are_checked_against(history: DashboardHistory) -> None:
    """The fixture itself: the gate found both regressions on `main` and the failing push, and passed their fixes."""
    regressed_at = [history.main_runs.index(r) for r, v in history.main_verdicts.items() if v.outcome == "fail"]
    assert regressed_at == [fixture.ARGUMENT_BROKEN[0], fixture.WORDING_BROKEN[0]]
    for fixed in (fixture.ARGUMENT_BROKEN[1], fixture.WORDING_BROKEN[1]):
        assert history.main_verdicts[history.main_run_at(fixed)].outcome == "pass"
    assert [p.verdict.outcome for p in history.pulls[41] if p.verdict] == ["pass", "fail", "pass"]


async def test_run_lists_show_the_gates_verdict(dash: httpx.AsyncClient, history: DashboardHistory) -> None:
    page = (await dash.get(REPO)).text
    for run_id, verdict in history.main_verdicts.items():
        row = re.search(rf'<tr data-run="{run_id}">.*?</tr>', page)
        assert row is not None and f"<td class=gate><span class={verdict_class(verdict.outcome)}>" in row.group(0)


def verdict_class(outcome: str) -> str:
    return {"pass": "pass", "fail": "fail", "inconclusive": "warn", "error": "fail"}[outcome]


async def test_the_repository_page_lists_both_pull_requests_and_only_the_flaky_cases(
    dash: httpx.AsyncClient, history: DashboardHistory
) -> None:
    page = (await dash.get(REPO)).text
    for number in history.pulls:
        assert f'<tr data-pr="{number}">' in page
        assert f'href="{REPO}/pulls/{number}"' in page
    flaky = page.split("<h2>Flakiness on main</h2>", 1)[1]
    listed = set(re.findall(r"albums_by_(\d\d)", flaky))
    assert listed and {int(n) for n in listed} <= set(fixture.FLAKY_CASES)  # the regressions are changes, not flips
    for name in ("cases passed", "cost", "tool_trajectory_avg_score", "invocation_duration_v1"):
        assert f'<figure data-metric="{name}">' in page


async def test_the_pr_page_shows_the_failing_push_and_the_fix(
    dash: httpx.AsyncClient, history: DashboardHistory
) -> None:
    pushes = history.pulls[41]
    page = (await dash.get(f"{REPO}/pulls/41")).text
    assert f'<div class="verdict verdict-{pushes[-1].verdict.outcome}" id=latest-verdict>' in page  # type: ignore[union-attr]
    failing = pushes[1].verdict
    assert failing is not None and failing.outcome == "fail"
    table = page.split("<table id=pushes>", 1)[1]
    assert html.escape(failing.headline, quote=True) in table  # the failing push's headline, in its row
    assert table.count("<tr data-commit=") == 3


async def test_a_re_run_push_is_one_row(dash: httpx.AsyncClient, history: DashboardHistory) -> None:
    page = (await dash.get(f"{REPO}/pulls/42")).text
    table = page.split("<table id=pushes>", 1)[1]
    assert table.count("<tr data-commit=") == 2 and "(2 runs)" in table


async def test_the_case_page_names_the_first_bad_commit_and_the_fix(
    dash: httpx.AsyncClient, history: DashboardHistory
) -> None:
    broken, fixed = fixture.ARGUMENT_BROKEN
    page = (await dash.get(f"{REPO}/cases/catalog/{case_id(fixture.ARGUMENT_CASES[0])}?branch=main")).text
    first_bad = page.split("<p id=first-bad>", 1)[1].split("</p>", 1)[0]
    assert history.main_commits[broken][:12] in first_bad and history.main_commits[fixed][:12] in first_bad
    assert f'<tr data-run="{history.main_run_at(broken)}" class=first-bad>' in page
    assert f'<tr data-run="{history.main_run_at(fixed)}" class=fixed>' in page
    chart = page.split('<figure data-metric="case passed">', 1)[1].split("</figure>", 1)[0]
    assert chart.count('xlink:href="/runs/main-') == len(history.main_runs)  # a point per run, each its link


async def test_compare_regressed_shows_exactly_the_broken_cases(
    dash: httpx.AsyncClient, history: DashboardHistory
) -> None:
    broken = fixture.ARGUMENT_BROKEN[0]
    pair = f"{history.main_run_at(broken - 1)}...{history.main_run_at(broken)}"
    page = (await dash.get(f"/compare/{pair}?show=regressed")).text
    shown = sorted(re.findall(r'<tr data-case="([^"]+)" data-change="regressed"', page))
    assert shown == regressed_between(history, *pair.split("..."))
    assert set(shown) >= {case_id(n) for n in fixture.ARGUMENT_CASES}  # the broken ones, and any flaky one that dropped
    assert f'data-count="regressed">{len(shown)} regressed</a>' in page


async def test_the_big_run_pages_are_paged_and_find_the_one_in_a_hundred(
    dash: httpx.AsyncClient, history: DashboardHistory
) -> None:
    assert history.big_runs is not None
    first, second = history.big_runs
    wrong = [f"order_{n}" for n in range(1, BIG_CASES + 1) if n % 100 == 7]
    page = (await dash.get(f"/compare/{first}...{second}?show=regressed")).text
    assert sorted(re.findall(r'data-case="([^"]+)" data-change="regressed"', page)) == sorted(wrong)
    run_page = (await dash.get(f"/runs/{second}")).text
    assert run_page.count("<details class=case") <= 100


def compare_report(history: DashboardHistory, baseline: str, candidate: str, into: Path) -> str:
    """The page `evalward compare BASELINE CANDIDATE --html` writes, run as a user runs it."""
    import subprocess
    import sys

    out = into / f"{baseline}...{candidate}.html"
    done = subprocess.run(
        [sys.executable, "-m", "evalward", "compare", baseline, candidate, "--html", str(out), "--db", history.url],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode in (0, 1), done.stderr
    return out.read_text(encoding="utf-8")


ROW = re.compile(r'<tr data-case="([^"]+)" data-change="([^"]+)"')


def counts_text(page: str) -> str:
    """The words of the counts line ("6 regressed, 1 improved · 1 flaky · 30 unchanged.")."""
    found = re.search(r"<p id=counts.*?</p>", page, re.S)
    assert found is not None
    return re.sub(r"<[^>]+>", "", found.group(0))


async def test_compare_html_is_the_compare_pages_view(
    dash: httpx.AsyncClient, history: DashboardHistory, tmp_path: Path
) -> None:
    """`evalward compare --html` lists the cases in the classes, order and counts of the dashboard's compare page,
    each count linking to its class's first row; a fix shows as improved."""
    for broken in fixture.ARGUMENT_BROKEN:  # the regression, then its fix
        baseline, candidate = history.main_run_at(broken - 1), history.main_run_at(broken)
        report = compare_report(history, baseline, candidate, tmp_path)
        rows = ROW.findall(report)
        pages = [(await dash.get(f"/compare/{baseline}...{candidate}?page={n}")).text for n in (1, 2)]
        served = [row for page in pages[: 1 if "rel=next" not in pages[0] else 2] for row in ROW.findall(page)]
        assert rows == served
        assert counts_text(report) == counts_text(pages[0])
        for change in {change for _, change in rows}:
            assert f'id="change-{change.replace(" ", "-")}"' in report
    fixed = compare_report(
        history,
        *[history.main_run_at(i) for i in (fixture.ARGUMENT_BROKEN[1] - 1, fixture.ARGUMENT_BROKEN[1])],
        tmp_path,
    )
    assert {case for case, change in ROW.findall(fixed) if change == "improved"} >= {
        case_id(n) for n in fixture.ARGUMENT_CASES
    }


PAGES = {
    "home": ("/", "Repositories"),
    "repository": (REPO, "Trends on main"),
    "pr-41": (f"{REPO}/pulls/41", "Pull request #41"),
    "case": (f"{REPO}/cases/catalog/{case_id(fixture.ARGUMENT_CASES[0])}?branch=main", "First bad commit"),
    "run": ("/runs/main-08", "main-08"),
}


@pytest.mark.slow
def test_every_page_in_headless_chromium(history: DashboardHistory, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    broken = fixture.ARGUMENT_BROKEN[0]
    compare = f"/compare/{history.main_run_at(broken - 1)}...{history.main_run_at(broken)}?show=regressed"
    assert history.big_runs is not None
    pages = {
        **PAGES,
        "compare": (compare, "regressed"),
        "big-compare": ("/compare/{}...{}".format(*history.big_runs), "regressed"),
    }
    driver = browser_or_skip()
    try:
        with open_store(history.url) as store:
            app = create_app(make_settings(history.url, public_read=True), store)
            with LiveServer(app) as server:
                for name, (path, expected) in pages.items():
                    driver.get(server.url + path)  # type: ignore[attr-defined]
                    body = driver.find_element(By.TAG_NAME, "main")  # type: ignore[attr-defined]
                    assert expected in body.text, name
                    # Nothing runs off the right edge: the page is as wide as the window.
                    width = driver.execute_script("return document.documentElement.scrollWidth")  # type: ignore[attr-defined]
                    inner = driver.execute_script("return window.innerWidth")  # type: ignore[attr-defined]
                    assert width <= inner, f"{name} is {width} px wide in a {inner} px window"
                    driver.save_screenshot(str(tmp_path / f"{name}.png"))  # type: ignore[attr-defined]
                driver.get(server.url + REPO)  # type: ignore[attr-defined]
                charts = driver.find_elements(By.CSS_SELECTOR, "figure svg.chart")  # type: ignore[attr-defined]
                assert len(charts) >= 4 and all(c.is_displayed() for c in charts)
                links = driver.find_elements(By.CSS_SELECTOR, 'figure[data-metric="cases passed"] svg a')  # type: ignore[attr-defined]
                assert len(links) == len(history.main_runs)  # a point per run, each a link to it
                driver.get(server.url + compare)  # type: ignore[attr-defined]
                rows = driver.find_elements(By.CSS_SELECTOR, "#cases tr[data-change]")  # type: ignore[attr-defined]
                expected = regressed_between(history, history.main_run_at(broken - 1), history.main_run_at(broken))
                assert sorted(r.get_attribute("data-case") for r in rows) == expected
        # The static report `evalward compare --html` writes: no server, the same view, nothing off the right edge.
        reports = {
            "compare-report": compare_report(
                history, history.main_run_at(broken - 1), history.main_run_at(broken), tmp_path
            ),
            "big-compare-report": compare_report(history, *history.big_runs, tmp_path),
        }
        for name, text in reports.items():
            (tmp_path / f"{name}.html").write_text(text, encoding="utf-8")
            driver.get((tmp_path / f"{name}.html").as_uri())  # type: ignore[attr-defined]
            first = driver.find_element(By.CSS_SELECTOR, "p.badge")  # type: ignore[attr-defined]
            # The gate's verdict leads, not the run's own thresholds (main-08 broke 6 cases: failed).
            assert re.fullmatch(r"(✅|❌|⚠️|💥) Gate (passed|failed|inconclusive|could not compare)", first.text), name
            assert name != "compare-report" or first.text == "❌ Gate failed"
            regressed = driver.find_elements(By.CSS_SELECTOR, '#cases tr[data-change="regressed"]')  # type: ignore[attr-defined]
            assert regressed and regressed[0].get_attribute("id") == "change-regressed"
            width = driver.execute_script("return document.documentElement.scrollWidth")  # type: ignore[attr-defined]
            inner = driver.execute_script("return window.innerWidth")  # type: ignore[attr-defined]
            assert width <= inner, f"{name} is {width} px wide in a {inner} px window"
            driver.save_screenshot(str(tmp_path / f"{name}.png"))  # type: ignore[attr-defined]
        pages = {**pages, **reports}
    finally:
        driver.quit()  # type: ignore[attr-defined]
    for name in pages:
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000, name


def test_tallies_from_the_rows_equal_tallies_from_the_run(history: DashboardHistory) -> None:
    """The compare page (the history's rows) and `evalward compare --html` (the run's own results) count alike."""
    from evalward.model.case_tally import tally_cases
    from evalward.store import case_views

    with open_store(history.url) as store:
        for run_id in (history.main_run_at(fixture.ARGUMENT_BROKEN[0]), history.pulls[42][-1].run_id):
            assert case_views.case_tallies(store, run_id) == tally_cases(store.load_run(run_id).cases)


def test_cost_per_result_is_the_mean_over_the_results_that_reported_one(history: DashboardHistory) -> None:
    from evalward.store import history as store_history

    runs = [history.main_run_at(fixture.LONGER_PROMPT - 1), history.main_run_at(fixture.LONGER_PROMPT)]
    with open_store(history.url) as store:
        costs = store_history.cost_per_result(store, [*runs, "no-such-run"])
        expected = []
        for run_id in runs:
            reported = [c.usage.cost_usd for c in store.load_run(run_id).cases if c.usage and c.usage.cost_usd]
            expected.append(sum(reported) / len(reported))
    assert set(costs) == set(runs)  # a run that is not stored has no cost
    assert [costs[r] for r in runs] == pytest.approx(expected)
    assert costs[runs[1]] > costs[runs[0]]  # the longer prompt costs more
