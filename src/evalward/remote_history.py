"""History kept by an `evalward serve` server instead of a database the CI job can reach.

With `server-url` + `server-token` (the Action's third history setup) a CI job has no history of its own: a
fresh runner starts with an empty SQLite file. It therefore

1. uploads its run (`POST /api/v1/runs`, append-only: 409 means it is already there), then
2. asks the server to select the baseline (`POST /api/v1/runs/{run_id}/baseline`) with what only the
   checkout knows — the merge-base and its first-parent ancestors — and gets back the chosen run, the
   candidates passed over and the base branch's flip rates,

and gates locally, with the repository's own policy, exactly as it would against its own database.

Network failures and 5xx answers are retried with exponential backoff; when the server stays unreachable the
caller reports "no baseline" saying why, never a regression.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalward.backoff import backoff_wait, server_wait_s
from evalward.errors import InfrastructureError
from evalward.model import RunResult
from evalward.model.verdict import Verdict
from evalward.redact import url_without_credentials
from evalward.run_json import render_json
from evalward.store.baseline_choice import BaselineSearch

if TYPE_CHECKING:
    import httpx


RETRY_BACKOFF_S = 1.0
"""First wait before retrying the server; doubled on each further attempt."""

MAX_ANCESTORS = 500
"""Most ancestor SHAs one baseline query carries (the local search walks no further either)."""


class BaselineQuery(BaseModel):
    """What the checkout knows and the server does not: the body of `POST /api/v1/runs/{run_id}/baseline`."""

    model_config = ConfigDict(defer_build=True, extra="forbid")

    spec: str = Field("auto", description="auto, none, RUN_ID, commit:SHA or branch:NAME (as `--baseline`).")
    base_branch: str | None = Field(None, description="The branch the pull request merges into.")
    merge_base: str | None = Field(None, description="The merge-base commit of the run's commit and the base.")
    ancestors: list[str] = Field(
        default_factory=list,
        max_length=MAX_ANCESTORS,
        description="First-parent ancestors of the merge-base, nearest first.",
    )


class FlipRate(BaseModel):
    """One case's flip rate on the base branch (see `Store.flip_rates`)."""

    eval_set_id: str
    case_id: str
    rate: float


class BaselineAnswer(BaseModel):
    """The server's reply: the baseline search as the local one would return it, plus flip rates."""

    search: dict[str, object] = Field(description="A `BaselineSearch` (the chosen run included).")
    flip_rates: list[FlipRate] = Field(default_factory=list)


class RemoteHistory:
    """The history API of one evalward server, authenticated with a repository's upload token."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        transport: httpx.BaseTransport | None = None,
        attempts: int = 4,
        backoff_s: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
        timeout_s: float = 60.0,
    ) -> None:
        import httpx

        self.url = url.rstrip("/")
        self.shown_url = url_without_credentials(self.url)  # errors name the server, never its credentials
        self._client = httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {token}", "User-Agent": "evalward"},
            timeout=timeout_s,
            transport=transport,
        )
        self._attempts = max(1, attempts)
        self._backoff_s = RETRY_BACKOFF_S if backoff_s is None else backoff_s
        self._sleep = sleep

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> RemoteHistory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def upload(self, run: RunResult) -> None:
        """Store `run` on the server; already stored (409) is success. InfrastructureError otherwise."""
        body = render_json(run).encode("utf-8")
        response = self._post("/api/v1/runs", body)
        if response.status_code not in (201, 409):
            raise InfrastructureError(self._failure("upload the run", response))

    def search_baseline(self, run_id: str, query: BaselineQuery) -> tuple[BaselineSearch, dict[tuple[str, str], float]]:
        """The server's baseline search for the stored run `run_id`, and the base branch's flip rates."""
        response = self._post(f"/api/v1/runs/{run_id}/baseline", query.model_dump_json().encode("utf-8"))
        if response.status_code != 200:
            raise InfrastructureError(self._failure("select the baseline", response))
        try:
            answer = BaselineAnswer.model_validate_json(response.content)
            search = BaselineSearch.model_validate(answer.search)
        except ValidationError as exc:
            raise InfrastructureError(
                f"the evalward server at {self.shown_url} answered the baseline query with an unexpected body: "
                f"{exc.errors()[0]['msg']} at {'.'.join(str(p) for p in exc.errors()[0]['loc'])}"
            ) from None
        return search, {(f.eval_set_id, f.case_id): f.rate for f in answer.flip_rates}

    def record_verdict(self, verdict: Verdict) -> None:
        """Keep the verdict that gated the run on the server too (`POST /api/v1/runs/{run_id}/verdicts`), so
        its dashboard shows what the pull request got."""
        response = self._post(
            f"/api/v1/runs/{verdict.current_run_id}/verdicts", verdict.model_dump_json().encode("utf-8")
        )
        if response.status_code != 201:
            raise InfrastructureError(self._failure("record the verdict", response))

    def _post(self, path: str, body: bytes) -> httpx.Response:
        """POST with retries: connection errors, timeouts and 5xx/429 are retried (`evalward.backoff`: about
        1, 2, 4 … s with jitter, or the server's `retry-after` when longer)."""
        import httpx

        last: str = ""
        asked: float | None = None
        for attempt in range(self._attempts):
            if attempt:
                self._sleep(backoff_wait(attempt, base_s=self._backoff_s, retry_after_s=asked))
            try:
                response = self._client.post(path, content=body, headers={"Content-Type": "application/json"})
            except httpx.HTTPError as exc:
                last = type(exc).__name__
                continue
            if response.status_code >= 500 or response.status_code == 429:
                last = f"HTTP {response.status_code}"
                asked = server_wait_s(response.headers)
                continue
            return response
        raise InfrastructureError(
            f"the evalward server at {self.shown_url}{path} did not answer after {self._attempts} attempts ({last})"
        )

    def _failure(self, what: str, response: httpx.Response) -> str:
        detail = response.text[:300].replace("\n", " ")
        return f"the evalward server at {self.shown_url} refused to {what}: HTTP {response.status_code}: {detail}"


def flip_rate_rows(rates: dict[tuple[str, str], float]) -> Sequence[FlipRate]:
    """`Store.flip_rates` as the rows the API sends."""
    return [FlipRate(eval_set_id=s, case_id=c, rate=r) for (s, c), r in sorted(rates.items())]
