"""The pull request page: the newest push's verdict and headline first, the cases it found regressed with their
diffs, every push with its verdict; in-process and in a real headless Chromium."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from tests.server.conftest import make_settings
from tests.server.live import LiveServer, dashboard_client
from tests.server.runs import dice_run, t
from tests.server.test_dashboard import browser_or_skip

from evalward._gating import gate_run
from evalward._server.app import create_app
from evalward.gate import GatePolicy
from evalward.model import Verdict
from evalward.store import open_store

PAGE = "/repos/acme/dice/pulls/9"


@pytest.fixture(scope="module")
def pull_request(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, Verdict]]]:
    """main, then PR #9: a first push that changes nothing, a second that breaks the dice (re-run once)."""
    root = tmp_path_factory.mktemp("pr-page")
    url = f"sqlite:///{root / 'server.db'}"
    verdicts: dict[str, Verdict] = {}
    with open_store(url) as store:
        dice_run(store, root, run_id="main-1", commit="1" * 40, started=t(0))
        pushes = [("push-a", "a", False, 10), ("push-b", "b", True, 20), ("push-b2", "b", True, 30)]
        for run_id, digit, broken, minute in pushes:
            dice_run(
                store,
                root,
                run_id=run_id,
                commit=digit * 40,
                branch="fix",
                pr_number=9,
                broken=broken,
                started=t(minute),
            )
            if run_id != "push-b":  # the first run of push b was cancelled before a verdict
                verdict = gate_run(
                    store, store.load_run(run_id), GatePolicy(), baseline_spec="main-1", repo_dir=None
                ).verdict
                store.record_verdict(verdict, source="ci")
                verdicts[run_id] = verdict
    yield url, verdicts


@pytest.fixture
async def dash(pull_request: tuple[str, dict[str, Verdict]]) -> AsyncIterator[httpx.AsyncClient]:
    async with dashboard_client(pull_request[0]) as http:
        yield http


async def test_the_newest_push_leads_with_its_verdict_and_regressed_cases(
    dash: httpx.AsyncClient, pull_request: tuple[str, dict[str, Verdict]]
) -> None:
    newest = pull_request[1]["push-b2"]
    page = (await dash.get(PAGE)).text
    assert f'<div class="verdict verdict-{newest.outcome}" id=latest-verdict>' in page
    assert "<h2>Newest push: " in page and "b" * 12 in page
    regressed = [c for c in newest.cases if c.label == "regressed"]
    assert regressed and f"<h2>Regressed cases ({len(regressed)})</h2>" in page
    assert '<span class="del">- roll_die(sides=17)</span>' in page  # the regressed case's trajectory diff
    assert 'href="/compare/main-1...push-b2?show=regressed"' in page
    assert '<a href="https://github.com/acme/dice/pull/9">on GitHub</a>' in page


async def test_every_push_is_listed_once_newest_first_with_its_verdict(dash: httpx.AsyncClient) -> None:
    page = (await dash.get(PAGE)).text
    pushes = page.split("<table id=pushes>", 1)[1]
    assert pushes.index('data-commit="' + "b" * 40) < pushes.index('data-commit="' + "a" * 40)
    assert pushes.count("<tr data-commit=") == 2
    assert "(2 runs)" in pushes  # push b was run twice; its newest run speaks for it
    assert '<a href="/runs/push-b2">push-b2</a>' in pushes and '<a href="/runs/push-b">' not in pushes


async def test_unknown_pull_requests_and_bad_numbers_are_404(dash: httpx.AsyncClient) -> None:
    assert (await dash.get("/repos/acme/dice/pulls/10")).status_code == 404
    assert (await dash.get("/repos/acme/dice/pulls/0")).status_code == 404
    assert (await dash.get("/repos/acme/dice/pulls/x1")).status_code == 404


@pytest.mark.slow
def test_the_pr_page_in_headless_chromium(pull_request: tuple[str, dict[str, Verdict]], tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    url, verdicts = pull_request
    driver = browser_or_skip()
    try:
        with open_store(url) as store:
            app = create_app(make_settings(url, public_read=True), store)
            with LiveServer(app) as server:
                driver.get(server.url + PAGE)  # type: ignore[attr-defined]
                latest = driver.find_element(By.ID, "latest-verdict")  # type: ignore[attr-defined]
                assert latest.text.startswith(verdicts["push-b2"].outcome.upper())
                diff = driver.find_element(By.CSS_SELECTOR, "details.case pre.diff")  # type: ignore[attr-defined]
                assert diff.is_displayed() and "+ roll_die(sides=20)" in diff.text
                assert len(driver.find_elements(By.CSS_SELECTOR, "#pushes tr[data-commit]")) == 2  # type: ignore[attr-defined]
                driver.save_screenshot(str(tmp_path / "pr.png"))  # type: ignore[attr-defined]
    finally:
        driver.quit()  # type: ignore[attr-defined]
    assert (tmp_path / "pr.png").stat().st_size > 10_000
