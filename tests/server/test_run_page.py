"""The run page of a large run: a page of cases at a time, those that did not pass first, searchable, compressed;
a verdict recomputed only for runs small enough to read whole."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
from tests.server.conftest import make_settings
from tests.server.runs import dice_run

from evalward._server.app import create_app
from evalward._server.dashboard import RUN_PAGE_CASES
from evalward.store import open_store


async def test_a_large_run_page_shows_a_page_of_cases_failing_first(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'big.db'}"
    with open_store(url) as store:
        run = dice_run(store, tmp_path, run_id="small", commit="1" * 40)
        template = run.cases[0]
        cases = [
            template.model_copy(update={"case_id": f"case-{i:03d}", "status": "failed" if i % 50 == 7 else "passed"})
            for i in range(RUN_PAGE_CASES + 50)
        ]
        store.import_run(run.model_copy(update={"run_id": "big", "cases": cases}))
        app = create_app(make_settings(url, public_read=True), store)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as http:
            first = await http.get("/runs/big", headers={"Accept-Encoding": "gzip"})
            second = (await http.get("/runs/big?page=2")).text
            failing = (await http.get("/runs/big?show=failing")).text
            found = (await http.get("/runs/big?q=case-149")).text
    assert first.headers["content-encoding"] == "gzip"  # decoded by httpx below
    shown = re.findall(r'<details class=case data-case="([^"]+)"', first.text)
    assert len(shown) == RUN_PAGE_CASES
    assert shown[:3] == ["case-007", "case-057", "case-107"]  # the failing ones first
    assert "147 of 150 cases passed every repetition" in first.text and "page 1 of 2" in first.text
    assert '<a href="?page=2" rel=next>next</a>' in first.text
    assert len(re.findall(r"<details class=case ", second)) == 50
    assert re.findall(r'<details class=case data-case="([^"]+)"', failing) == ["case-007", "case-057", "case-107"]
    assert re.findall(r'<details class=case data-case="([^"]+)"', found) == ["case-149"]
    # 150 results are within the recompute limit: the page still gates the run itself
    assert '<div class="verdict' in first.text
