"""The case page: when a case started failing on the base branch, told apart from flakiness; reached from the run
page and the repository's flakiness table; rendered in-process and in a real headless Chromium."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from tests.server.conftest import make_settings
from tests.server.live import LiveServer, dashboard_client
from tests.server.runs import dice_run, t
from tests.server.test_dashboard import browser_or_skip

from evalward._server.app import create_app
from evalward._server.case_page import changes_and_flips, tell
from evalward.store import open_store
from evalward.store.case_views import CaseRunPoint

CASE = "roll_17_sided_dice_twice"  # a "roll a die" case: the broken agent fails it
CASE_PAGE = f"/repos/acme/dice/cases/dice_basic/{CASE}?branch=main"


def point(index: int, passed: bool) -> CaseRunPoint:
    return CaseRunPoint(
        run_id=f"r{index}",
        commit=f"{index:07d}" + "0" * 33,
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
        passes=int(passed),
        results=1,
        errors=0,
        scores={"m": float(passed)},
    )


def story_of(outcomes: str) -> tuple[str, str | None, str | None, int, int]:
    story = tell([point(i, c == "P") for i, c in enumerate(outcomes)], "main")
    bad = story.first_bad.run_id if story.first_bad else None
    good = story.last_good.run_id if story.last_good else None
    return story.headline, bad, good, story.flips, story.pairs


@pytest.mark.parametrize(
    ("outcomes", "streaks", "flips", "pairs"),
    [
        ("PPPP", [], 0, 3),
        ("PFPF", [], 3, 3),
        ("PPFFF", [(2, 4)], 0, 3),  # the change into the streak is not a flip
        ("PFPPFFFP", [(4, 6)], 2, 5),  # hand count: pairs 7 less 2 changes; flips P→F, F→P at the start
        ("FFPP", [], 1, 3),  # failing from the first run shown: no passing run before it, so no change found
        ("PF", [], 1, 1),  # one failing run is not yet sustained
    ],
)
def test_sustained_changes_are_not_flips(outcomes: str, streaks: list[tuple[int, int]], flips: int, pairs: int) -> None:
    assert changes_and_flips([c == "P" for c in outcomes]) == (streaks, flips, pairs)


def test_the_story_names_the_first_bad_commit_of_a_sustained_failure() -> None:
    headline, bad, good, flips, pairs = story_of("PPPFFF")
    assert headline == "Failing since commit 0000003: 3 runs in a row, after passing at 0000002."
    assert (bad, good, flips, pairs) == ("r3", "r2", 0, 4)


def test_the_story_tells_flakiness_a_fix_and_a_single_bad_run_apart() -> None:
    assert (
        story_of("PFPFP")[0]
        == "Passing in the newest run. Flaky meanwhile: its outcome flipped 4 times in 4 pairs of runs."
    )
    assert (
        story_of("PPFFPP")[0] == "Passing since commit 0000004, which fixed a failure that began at 0000002 (2 runs)."
    )
    assert story_of("PPPF")[0].startswith("Failed in the newest run, after passing in the one before")
    assert story_of("FFF")[0] == "Failing in every one of the 3 runs on main: it started before the runs shown."
    assert story_of("PPP")[0] == "Passing in all 3 runs on main."
    assert story_of("")[0] == "This case has no complete run on main."


@pytest.fixture(scope="module")
def regressed_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Four runs on main: two pass, then the agent breaks and stays broken for two commits."""
    root = tmp_path_factory.mktemp("case-page")
    url = f"sqlite:///{root / 'server.db'}"
    with open_store(url) as store:
        for minute, (digit, broken) in enumerate([("1", False), ("2", False), ("3", True), ("4", True)]):
            dice_run(store, root, run_id=f"main-{digit}", commit=digit * 40, broken=broken, started=t(minute * 10))
    yield url


@pytest.fixture
async def dash(regressed_db: str) -> AsyncIterator[httpx.AsyncClient]:
    async with dashboard_client(regressed_db) as http:
        yield http


async def test_the_case_page_leads_with_the_first_bad_commit(dash: httpx.AsyncClient) -> None:
    page = await dash.get(CASE_PAGE)
    assert page.status_code == 200
    text = page.text
    assert "Failing since commit 3333333: 2 runs in a row, after passing at 2222222." in text
    assert 'First bad commit: <a href="https://github.com/acme/dice/commit/' + "3" * 40 + '">' in text
    assert '<tr data-run="main-3" class=first-bad>' in text
    # newest first, one row per run on main, repetitions passed as counts (never a rounded rate)
    rows = [text.index(f'<tr data-run="main-{n}"') for n in (4, 3, 2, 1)]
    assert rows == sorted(rows)
    assert text.count("<td class=num>0 of 1</td>") == 2 and text.count("<td class=num>1 of 1</td>") == 2
    # the newest runs' results, with the trajectory diff of the failing turn
    assert '<span class="del">- roll_die(sides=17)</span>' in text
    assert "<script" not in text


async def test_the_run_page_links_each_case_to_its_history(dash: httpx.AsyncClient) -> None:
    page = (await dash.get("/runs/main-4")).text
    assert f'<a class=case-history href="/repos/acme/dice/cases/dice_basic/{CASE}?branch=main">' in page


async def test_a_sustained_regression_is_not_listed_as_flaky(dash: httpx.AsyncClient) -> None:
    page = (await dash.get("/repos/acme/dice")).text
    assert CASE not in page.split("Flakiness on main", 1)[1]
    assert "No case flipped between pass and fail on main" in page


async def test_a_case_id_with_a_slash_and_markup_stays_one_escaped_path(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'odd.db'}"
    odd = 'a/b<script>"'
    with open_store(url) as store:
        run = dice_run(store, tmp_path, run_id="odd-1", commit="7" * 40, repository="acme/odd")
        cases = [c.model_copy(update={"case_id": odd}) for c in run.cases[:1]]
        store.import_run(run.model_copy(update={"run_id": "odd-2", "cases": cases}))
        app = create_app(make_settings(url, public_read=True), store)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as http:
            run_page = (await http.get("/runs/odd-2")).text
            link = "/repos/acme/odd/cases/dice_basic/a%2Fb%3Cscript%3E%22?branch=main"
            assert f'href="{link}"' in run_page
            page = await http.get(link)
    assert page.status_code == 200
    assert "<script>" not in page.text
    assert "<h1>Case a/b&lt;script&gt;&quot;</h1>" in page.text


@pytest.mark.slow
def test_the_case_page_in_headless_chromium(regressed_db: str, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    driver = browser_or_skip()
    try:
        with open_store(regressed_db) as store:
            app = create_app(make_settings(regressed_db, public_read=True), store)
            with LiveServer(app) as server:
                driver.get(server.url + "/runs/main-4")  # type: ignore[attr-defined]
                case = driver.find_element(By.CSS_SELECTOR, f'details.case[data-case="{CASE}"]')  # type: ignore[attr-defined]
                case.find_element(By.CSS_SELECTOR, "a.case-history").click()
                story = driver.find_element(By.ID, "story")  # type: ignore[attr-defined]
                assert story.text.startswith("Failing since commit 3333333")
                first_bad = driver.find_element(By.CSS_SELECTOR, "#timeline tr.first-bad")  # type: ignore[attr-defined]
                assert first_bad.get_attribute("data-run") == "main-3" and first_bad.is_displayed()
                assert len(driver.find_elements(By.CSS_SELECTOR, "#timeline tr[data-run]")) == 4  # type: ignore[attr-defined]
                driver.save_screenshot(str(tmp_path / "case.png"))  # type: ignore[attr-defined]
    finally:
        driver.quit()  # type: ignore[attr-defined]
    assert (tmp_path / "case.png").stat().st_size > 10_000


async def test_run_lists_lead_with_the_gates_verdict(regressed_db: str) -> None:
    """A run a gate judged shows that verdict first; its own threshold result comes second; others say so."""
    from evalward._gating import gate_run
    from evalward.gate import GatePolicy

    with open_store(regressed_db) as store:
        outcome = gate_run(store, store.load_run("main-3"), GatePolicy(), baseline_spec="main-2", repo_dir=None)
        store.record_verdict(outcome.verdict, source="test")
        app = create_app(make_settings(regressed_db, public_read=True), store)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as http:
            repo_page = (await http.get("/repos/acme/dice")).text
            home = (await http.get("/")).text
    row = repo_page.split('<tr data-run="main-3">', 1)[1].split("</tr>", 1)[0]
    shown = {"pass": "pass", "fail": "fail"}.get(outcome.verdict.outcome, "warn")
    assert f"<td class=gate><span class={shown}>{outcome.verdict.outcome}</span></td>" in row
    assert "<td class=muted>not met</td>" in row  # the thresholds' result, second and muted: never a red "failed"
    other = repo_page.split('<tr data-run="main-2">', 1)[1].split("</tr>", 1)[0]
    assert "<td class=gate><span class=muted>not gated</span></td>" in other
    assert "<th>Gate</th><th>Thresholds</th>" in home
