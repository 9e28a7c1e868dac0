"""The dashboard: server-rendered pages in-process (content, escaping, auth), then the same pages in a real
headless Chromium (Debian's `chromium` + `chromium-driver`, driven by Selenium) over a real socket, with
screenshots saved under test-artifacts/server/."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from tests.fakes.hostile_html import ESCAPED, HOSTILE, PAYLOADS, assert_neutralised
from tests.server.conftest import make_settings
from tests.server.live import LiveServer, dashboard_client
from tests.server.runs import dice_run, t

from evalward._server.app import create_app
from evalward._server.tokens import hash_token
from evalward.store import open_store

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "server"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
EVIL = '<script>alert("x")</script>'


@pytest.fixture(scope="module")
def history_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Three base-branch runs, one flaky case, and a PR run that regresses."""
    root = tmp_path_factory.mktemp("dash")
    url = f"sqlite:///{root / 'server.db'}"
    with open_store(url) as store:
        dice_run(store, root, run_id="main-1", commit="1" * 40, started=t(0))
        dice_run(store, root, run_id="main-2", commit="2" * 40, broken=True, started=t(10))
        dice_run(store, root, run_id="main-3", commit="3" * 40, started=t(20))
        dice_run(store, root, run_id="pr-7", commit="4" * 40, branch="feature", pr_number=7, broken=True, started=t(30))
    yield url


@pytest.fixture
async def dash(history_db: str) -> AsyncIterator[httpx.AsyncClient]:
    async with dashboard_client(history_db) as http:
        yield http


async def test_home_lists_repositories(dash: httpx.AsyncClient) -> None:
    page = await dash.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<a href="/repos/acme/dice">acme/dice</a>' in page.text
    assert "<script" not in page.text


async def test_repo_page_has_a_trend_chart_per_metric_and_flip_rates(dash: httpx.AsyncClient) -> None:
    page = (await dash.get("/repos/acme/dice")).text
    # tool_trajectory_avg_score and response_match_score first (they have thresholds), then the ADK efficiency
    # metrics the agent gave values for; token usage and model calls were never reported: a line, not a chart.
    # The share of case results passed leads (passed, failed, passed on main).
    assert page.count("<svg class=chart") == 5
    assert page.index('data-metric="cases passed"') < page.index('data-metric="response_match_score"')
    order = [page.index(f'data-metric="{m}"') for m in ("response_match_score", "tool_trajectory_avg_score")]
    assert order == sorted(order) and order[-1] < page.index('data-metric="invocation_duration_v1"')
    assert (
        "No values recorded on this branch for: <code>inference_call_count_v1</code>, <code>token_usage_v1</code>"
        in page
    )
    chart = page.split('data-metric="tool_trajectory_avg_score"', 1)[1].split("</figure>", 1)[0]
    # drawn by vl-convert: commits on the x axis, a point per run linking to its page, the threshold's rule
    assert "commit (oldest left)" in chart and "1111111" in chart and "3333333" in chart
    assert chart.count('<a xlink:href="/runs/main-') == 3  # the points
    assert "vega.github.io" not in page  # every link is this server's
    assert "dashed: the threshold" in chart
    assert "<script" not in page
    assert "3 of 3 runs on main have a value" in page
    # Hand calculation: each case passed, failed, passed on main → 2 flips / 2 pairs = 1.000.
    case_link = '<a href="/repos/acme/dice/cases/dice_basic/roll_17_sided_dice_twice?branch=main">'
    assert f"<td>{case_link}roll_17_sided_dice_twice</a></td><td class=num>1.000</td><td class=num>3</td>" in page


async def test_repo_page_lists_pull_requests_and_finds_runs(dash: httpx.AsyncClient) -> None:
    page = (await dash.get("/repos/acme/dice")).text
    assert '<tr data-pr="7"><td><a href="/repos/acme/dice/pulls/7">#7</a></td>' in page
    assert '<a href="?branch=feature">feature</a>' in page  # a branch opens its trends
    found = (await dash.get("/repos/acme/dice?q=%237")).text
    runs = found.split("<h2>Runs", 1)[1]
    assert runs.count("<tr data-run=") == 1 and 'data-run="pr-7"' in runs
    by_commit = (await dash.get("/repos/acme/dice?q=2222")).text.split("<h2>Runs", 1)[1]
    assert 'data-run="main-2"' in by_commit and by_commit.count("<tr data-run=") == 1
    nothing = (await dash.get("/repos/acme/dice?q=nope")).text
    assert "No run matches “nope”." in nothing


async def test_run_page_shows_verdict_metrics_and_the_trajectory_diff(dash: httpx.AsyncClient) -> None:
    page = (await dash.get("/runs/pr-7")).text
    assert '<div class="verdict' in page
    assert "<th>95% interval</th>" in page
    assert '<pre class=diff><span class="mark">! first divergence at expected call 1</span>' in page
    assert '<span class="del">- roll_die(sides=17)</span>' in page
    assert '<span class="add">+ roll_die(sides=20)</span>' in page


async def test_unknown_pages_are_404_html(dash: httpx.AsyncClient) -> None:
    page = await dash.get("/runs/nope", headers={"Accept": "text/html"})
    assert page.status_code == 404 and "run &#x27;nope&#x27; is not stored" in page.text


async def test_untrusted_ids_are_escaped(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'evil.db'}"
    with open_store(url) as store:
        run = dice_run(store, tmp_path, run_id="evil-run", commit="5" * 40, repository="acme/evil")
        cases = [c.model_copy(update={"case_id": EVIL}) for c in run.cases[:1]]
        store.import_run(run.model_copy(update={"run_id": "evil-2", "cases": cases}))
        app = create_app(make_settings(url, public_read=True), store)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as http:
            page = (await http.get("/runs/evil-2")).text
    assert EVIL not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page


async def test_hostile_case_data_is_escaped_on_every_page_that_shows_it(tmp_path: Path) -> None:
    """A case id, query, tool-call argument and response carrying script, attribute break-out, template syntax
    and a `</textarea>`: served over HTTP, each is escaped (never evaluated) wherever it is shown."""
    url = f"sqlite:///{tmp_path / 'hostile.db'}"
    with open_store(url) as store:
        run = dice_run(store, tmp_path, run_id="hostile-run", commit="6" * 40, repository="acme/hostile")
        case = next(c for c in run.cases if c.invocations[0].actual_tool_calls and c.invocations[0].expected_tool_calls)
        turn = case.invocations[0]
        calls = [call.model_copy(update={"args": {"sides": HOSTILE}}) for call in turn.actual_tool_calls]
        turn = turn.model_copy(update={"query": HOSTILE, "actual_response": HOSTILE, "actual_tool_calls": calls})
        hostile = case.model_copy(update={"case_id": HOSTILE, "status": "failed", "invocations": [turn]})
        store.import_run(run.model_copy(update={"run_id": "hostile-2", "cases": [hostile]}))
        app = create_app(make_settings(url, public_read=True), store)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as http:
            page = await http.get("/runs/hostile-2")
            breakout = PAYLOADS["attribute break-out"]  # no "/": it stays one path segment
            missing = await http.get("/runs/" + quote(breakout, safe=""), headers={"Accept": "text/html"})
    assert page.status_code == 200
    assert page.headers["content-security-policy"] == "default-src 'self'; style-src 'self'"
    assert_neutralised(page.text)
    assert f'data-case="{ESCAPED["script"]}' in page.text  # the attribute stays one attribute
    assert f"sides=&quot;{ESCAPED['script']}" in page.text  # in the trajectory diff
    assert missing.status_code == 404
    assert f"run &#x27;{ESCAPED['attribute break-out']}&#x27; is not stored" in missing.text
    assert "<img" not in missing.text


async def test_private_dashboard_redirects_to_login_and_the_cookie_opens_it(history_db: str) -> None:
    token = "ewt_reader"
    with open_store(history_db) as store:
        app = create_app(make_settings(history_db, read_token_hashes=[hash_token(token)]), store)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as http:
            redirect = await http.get("/repos/acme/dice")
            assert (redirect.status_code, redirect.headers["location"]) == (303, "/login?next=/repos/acme/dice")
            wrong = await http.post("/login?next=/repos/acme/dice", data={"token": "ewt_wrong"})
            assert wrong.status_code == 401
            signed_in = await http.post("/login?next=/repos/acme/dice", data={"token": token})
            assert (signed_in.status_code, signed_in.headers["location"]) == (303, "/repos/acme/dice")
            assert (await http.get("/repos/acme/dice")).status_code == 200  # the cookie is sent now
            evil_next = await http.post("/login?next=//evil.example", data={"token": token})
            assert evil_next.headers["location"] == "/"


# -- a real browser ---------------------------------------------------------------------------------------------


def browser_or_skip() -> object:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    if missing:
        reason = f"{', '.join(missing)} missing: apt-get install chromium chromium-driver"
        if os.environ.get("CI", "").lower() == "true" and os.environ.get("EVALWARD_REQUIRE_BROWSER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (the test extra has it)")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,1400",
    ):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


@pytest.mark.slow
def test_pages_render_in_headless_chromium(history_db: str) -> None:
    from selenium.webdriver.common.by import By

    driver = browser_or_skip()
    if ARTIFACTS.exists():
        shutil.rmtree(ARTIFACTS)
    ARTIFACTS.mkdir(parents=True)
    try:
        with open_store(history_db) as store:
            app = create_app(make_settings(history_db, public_read=True), store)
            with LiveServer(app) as server:
                driver.get(server.url + "/")  # type: ignore[attr-defined]
                assert driver.title == "Repositories · evalward"  # type: ignore[attr-defined]
                driver.save_screenshot(str(ARTIFACTS / "home.png"))  # type: ignore[attr-defined]

                driver.find_element(By.LINK_TEXT, "acme/dice").click()  # type: ignore[attr-defined]
                charts = driver.find_elements(By.CSS_SELECTOR, "svg.chart")  # type: ignore[attr-defined]
                assert len(charts) == 5  # cases passed, 2 criteria, the 2 ADK efficiency metrics that have values
                chart = driver.find_element(  # type: ignore[attr-defined]
                    By.CSS_SELECTOR, 'figure[data-metric="tool_trajectory_avg_score"] svg.chart'
                )
                assert chart.size["width"] > 300  # laid out by the browser, not just present
                line = chart.find_element(By.CSS_SELECTOR, "g.mark-line path")
                assert line.size["width"] > 100  # drawn across the chart
                points = chart.find_elements(By.CSS_SELECTOR, "a")
                assert len(points) == 3  # one link per run
                driver.save_screenshot(str(ARTIFACTS / "repo.png"))  # type: ignore[attr-defined]

                driver.get(server.url + "/runs/pr-7")  # type: ignore[attr-defined]
                diff = driver.find_element(By.CSS_SELECTOR, "details.case pre.diff")  # type: ignore[attr-defined]
                assert diff.is_displayed()
                assert "+ roll_die(sides=20)" in diff.text
                driver.save_screenshot(str(ARTIFACTS / "run.png"))  # type: ignore[attr-defined]
    finally:
        driver.quit()  # type: ignore[attr-defined]
    assert sorted(p.name for p in ARTIFACTS.glob("*.png")) == ["home.png", "repo.png", "run.png"]
