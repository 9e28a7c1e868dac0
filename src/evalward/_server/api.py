"""The JSON API under `/api/v1` and its OpenAPI document (`/openapi.json`).

| method, path | auth | answer |
| --- | --- | --- |
| `POST /api/v1/runs` | upload token of the run's repository | 201 `{run_id, url}`; 409 when the run id is already stored for a repository the token may upload to (append-only) |
| `GET /api/v1/repos/{owner}/{repo}/runs` | read | run rows, newest first (`branch`, `status`, `limit`) |
| `GET /api/v1/runs/{run_id}` | read | the stored `RunResult` |
| `POST /api/v1/runs/{run_id}/baseline` | upload token of the run's repository, or read | the baseline search for a stored run, given the merge-base and ancestors the caller's checkout knows (see `evalward.remote_history`) |
| `POST /api/v1/runs/{run_id}/verdicts` | upload token of the run's repository | 201: the verdict that gated the run (`evalward ci` with `server-url`) is kept and shown by the dashboard |
| `GET /api/v1/runs/{run_id}/verdicts` | read | the recorded verdicts of a run, newest first |
| `GET /api/v1/runs/{run_id}/compare` | read | the `Verdict` against `baseline` (auto, none, RUN_ID, commit:SHA, branch:NAME) |
| `GET /api/v1/repos/{owner}/{repo}/cases/{case_id}/history` | read | per run and metric: the case's mean score |
| `GET /api/v1/jobs` | read | jobs, newest first (`status`, `repo`, `limit`) |

Read endpoints need `Authorization: Bearer <read token>` (or the dashboard's cookie) unless the server
is configured `public_read`.

**Authenticate, then read.** The POST endpoints check the token before they read a byte of the body: no
token is 401, a token that may upload to no repository (or read nothing) is 403, answered at once with
`Connection: close`, so a refused upload is never read, parsed or held in memory. Only then is the body
read (`api_bodies.py`), capped (`max_upload_bytes` for runs, 16 MiB for verdicts, 1 MiB for baseline queries;
413 as soon as it is over, without reading the rest) and within `body_timeout_s` (408), and parsed and
validated in a worker thread when it is large, so the event loop keeps serving other requests.

**Other repositories stay invisible to an upload token.** A run of a repository the token may not upload
to is answered exactly as a run that is not stored (404 on verdicts and baseline queries). An upload whose
run id is taken by another repository's run gets the same 422 as a run id the server cannot use (one with
`/`, `?`, `#`, `%`, `\\` or control characters, `.`/`..`, or over 200 characters) — not a 409, which is kept
for the token's own repositories (where it means "already uploaded", and `evalward ci` takes it as success).

Input is checked where it enters (`boundary.py`): a path or query value with a control character (NUL
included) or over its length, and a body that is not JSON, nests deeper than 100 or holds a NUL character,
are 400; a value the database refuses anyway is 422. Only evalward's own faults are 500, logged (through the
redactor) with their traceback. Tokens are compared by hash (`tokens.py`). Every error is
`{"error": {"status", "message"}}` with the matching status code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from evalward import __version__
from evalward._gating import gate_run
from evalward._server.api_bodies import (
    MAX_BASELINE_QUERY_BYTES,
    MAX_VERDICT_BYTES,
    parse_baseline_query,
    parse_run,
    parse_verdict,
    read_body,
)
from evalward._server.boundary import error_response, off_loop
from evalward._server.settings import MAX_UPLOAD_BYTES
from evalward._server.tokens import bearer_token, repositories_of, token_matches
from evalward.errors import EvalwardError, GateInputError, InfrastructureError
from evalward.gate import GatePolicy
from evalward.remote_history import BaselineAnswer, BaselineQuery, flip_rate_rows
from evalward.store import search_baseline

READ_COOKIE = "evalward_read"
MAX_RUN_ID_CHARS = 200
MAX_LIMIT = 500
__all__ = ["MAX_UPLOAD_BYTES", "READ_COOKIE", "api_routes", "can_read", "evalward_error_handler"]

_UNUSABLE_IN_RUN_ID = re.compile(r"[/\\?#%\x00-\x1f\x7f]")


def _state(request: Request) -> Any:
    return request.app.state.server


def can_read(request: Request) -> bool:
    settings = _state(request).settings
    if settings.public_read:
        return True
    token = bearer_token(request.headers.get("authorization")) or request.cookies.get(READ_COOKIE)
    return token_matches(token, settings.read_token_hashes)


def require_read(request: Request) -> None:
    if not can_read(request):
        raise HTTPException(401, "a read token is required: send `Authorization: Bearer <token>`")


def _limit(request: Request, default: int = 50) -> int:
    raw = request.query_params.get("limit")
    if raw is None:
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        raise HTTPException(400, f"limit must be an integer from 1 to {MAX_LIMIT}, found {raw!r}")
    return int(raw)


def _repo(request: Request) -> str:
    return f"{request.path_params['owner']}/{request.path_params['repo']}"


def unusable_run_id_message(run_id: str) -> str:
    """The one answer for a run id the server will not store under: malformed, or taken by a run the token
    may not see (the two are not told apart)."""
    return f"run id {run_id[:MAX_RUN_ID_CHARS]!r} cannot be used on this server; run again with another --run-id"


def usable_run_id(run_id: str) -> bool:
    """A run id that works in the API's paths: 1..200 characters, no `/ \\ ? # %` or control characters, not `.`
    or `..`."""
    return 0 < len(run_id) <= MAX_RUN_ID_CHARS and run_id not in (".", "..") and not _UNUSABLE_IN_RUN_ID.search(run_id)


@dataclass(frozen=True)
class Caller:
    """Who is asking: a reader (read token, cookie or `public_read`) sees every run; an upload token only the
    runs of the repositories it may upload to."""

    reader: bool
    repositories: frozenset[str]

    def sees(self, repository: str | None) -> bool:
        return self.reader or (repository is not None and repository in self.repositories)


def upload_caller(request: Request, *, what: str) -> Caller:
    """The caller of an upload endpoint, from its token alone (no body read): 401 without a token, 403 for a
    token that may upload to no repository."""
    token = bearer_token(request.headers.get("authorization"))
    if token is None:
        raise HTTPException(401, "an upload token is required: send `Authorization: Bearer <token>`")
    repositories = repositories_of(token, _state(request).settings.upload_token_hashes)
    if not repositories:
        raise HTTPException(403, f"this token may not {what}")
    return Caller(reader=False, repositories=repositories)


async def visible_run(request: Request, caller: Caller) -> str:
    """The path's run id when the run is stored and `caller` may see it; else 404, the same answer whether the
    run does not exist or belongs to a repository the caller may not see."""
    run_id: str = request.path_params["run_id"]
    stored, repository = await run_in_threadpool(_state(request).store.run_repository, run_id)
    if not stored or not caller.sees(repository):
        raise HTTPException(404, f"run {run_id!r} is not stored; upload it first")
    return run_id


async def upload_run(request: Request) -> Response:
    state = _state(request)
    caller = upload_caller(request, what="upload runs")
    body = await read_body(request, state.settings.max_upload_bytes, "the run")
    run = await off_loop(len(body), parse_run, body)
    repo = run.context.repository
    if not repo:
        raise HTTPException(422, "the run has no context.repository (owner/name); run with --repo or in Actions")
    if repo not in caller.repositories:
        raise HTTPException(403, f"this token may not upload runs of {repo}")
    if not usable_run_id(run.run_id):
        raise HTTPException(422, unusable_run_id_message(run.run_id))

    def store_it() -> str:
        stored, owner = state.store.run_repository(run.run_id)
        if not stored:
            if state.store.import_new_run(run):
                return "stored"
            stored, owner = state.store.run_repository(run.run_id)  # another upload of this id came first
        return "again" if caller.sees(owner) else "taken"

    outcome = await run_in_threadpool(store_it)
    if outcome == "again":
        raise HTTPException(409, f"run {run.run_id!r} is already stored; runs are append-only")
    if outcome == "taken":
        raise HTTPException(422, unusable_run_id_message(run.run_id))
    return JSONResponse({"run_id": run.run_id, "url": f"/api/v1/runs/{run.run_id}"}, status_code=201)


async def baseline_for_run(request: Request) -> Response:
    """Select the baseline of a stored run as `evalward gate` would, with the git facts sent by the caller."""
    state = _state(request)
    if can_read(request):
        caller = Caller(reader=True, repositories=frozenset())
    elif bearer_token(request.headers.get("authorization")) is None:
        raise HTTPException(401, "a read token or the run's upload token is required: send `Authorization: Bearer`")
    else:
        caller = upload_caller(request, what="read the history of any repository")
    run_id = await visible_run(request, caller)
    body = await read_body(request, MAX_BASELINE_QUERY_BYTES, "the baseline query")
    query = await off_loop(len(body), parse_baseline_query, body)

    def search() -> BaselineAnswer:
        current = state.store.load_run(run_id)
        found = search_baseline(
            state.store,
            query.spec,
            current=current,
            base_branch=query.base_branch,
            merge_base=query.merge_base,
            ancestors=query.ancestors,
        )
        rates = state.store.flip_rates(query.base_branch, fingerprint=current.fingerprint) if query.base_branch else {}
        return BaselineAnswer(search=found.model_dump(mode="json"), flip_rates=list(flip_rate_rows(rates)))

    answer = await run_in_threadpool(search)
    return JSONResponse(answer.model_dump(mode="json"))


async def record_run_verdict(request: Request) -> Response:
    """Keep the verdict a CI job reached for an uploaded run (the run's upload token is required)."""
    state = _state(request)
    caller = upload_caller(request, what="record verdicts")
    run_id = await visible_run(request, caller)
    body = await read_body(request, MAX_VERDICT_BYTES, "the verdict")
    verdict = await off_loop(len(body), parse_verdict, body)
    if verdict.current_run_id != run_id:
        raise HTTPException(422, f"the verdict is for run {verdict.current_run_id!r}, not {run_id!r}")
    await run_in_threadpool(lambda: state.store.record_verdict(verdict, source="upload"))
    return JSONResponse({"run_id": run_id, "outcome": verdict.outcome}, status_code=201)


async def list_run_verdicts(request: Request) -> Response:
    require_read(request)
    state = _state(request)
    run_id = request.path_params["run_id"]

    def load() -> list[dict[str, Any]]:
        if not state.store.has_run(run_id):
            raise HTTPException(404, f"run {run_id!r} is not stored")
        return [r.model_dump(mode="json") for r in state.store.recorded_verdicts(run_id)]

    return JSONResponse({"run_id": run_id, "verdicts": await run_in_threadpool(load)})


async def list_repo_runs(request: Request) -> Response:
    require_read(request)
    state = _state(request)
    limit = _limit(request)
    rows = await run_in_threadpool(
        state.store.list_runs,
        repository=_repo(request),
        branch=request.query_params.get("branch"),
        status=request.query_params.get("status"),
        limit=limit,
    )
    return JSONResponse({"repository": _repo(request), "runs": [r.model_dump(mode="json") for r in rows]})


def _load_run(request: Request) -> Any:
    state = _state(request)
    run_id = request.path_params["run_id"]
    if not state.store.has_run(run_id):
        raise HTTPException(404, f"run {run_id!r} is not stored")
    return state.store.load_run(run_id)


async def get_run(request: Request) -> Response:
    require_read(request)
    run = await run_in_threadpool(_load_run, request)
    return JSONResponse(run.model_dump(mode="json"))


def compare_runs(request: Request) -> dict[str, Any]:
    state = _state(request)
    current = _load_run(request)
    spec = request.query_params.get("baseline", "auto")
    allow = request.query_params.get("allow_mismatch", "").lower() in ("1", "true", "yes")
    if spec not in ("auto", "none") and not spec.startswith(("commit:", "branch:")) and not state.store.has_run(spec):
        raise HTTPException(404, f"baseline run {spec!r} is not stored")
    # No checkout here (repo_dir=None): the merge-base is the one the run recorded.
    outcome = gate_run(state.store, current, GatePolicy(), baseline_spec=spec, allow_mismatch=allow, repo_dir=None)
    return {
        "run_id": current.run_id,
        "baseline_run_id": outcome.baseline.run_id if outcome.baseline else None,
        "searched": list(outcome.search.searched),
        "verdict": outcome.verdict.model_dump(mode="json"),
    }


async def compare(request: Request) -> Response:
    require_read(request)
    return JSONResponse(await run_in_threadpool(compare_runs, request))


async def case_history(request: Request) -> Response:
    require_read(request)
    state = _state(request)
    points = await run_in_threadpool(
        state.store.case_history,
        repository=_repo(request),
        case_id=request.path_params["case_id"],
        metric=request.query_params.get("metric"),
        branch=request.query_params.get("branch"),
        limit=_limit(request),
    )
    return JSONResponse(
        {
            "repository": _repo(request),
            "case_id": request.path_params["case_id"],
            "points": [p.model_dump(mode="json") for p in points],
        }
    )


async def list_jobs(request: Request) -> Response:
    require_read(request)
    state = _state(request)
    jobs = await run_in_threadpool(
        state.queue.list_jobs,
        status=request.query_params.get("status"),
        repo=request.query_params.get("repo"),
        limit=_limit(request),
    )
    return JSONResponse({"jobs": [j.model_dump(mode="json") for j in jobs]})


async def openapi(request: Request) -> Response:
    return JSONResponse(openapi_document())


async def evalward_error_handler(request: Request, exc: Exception) -> Response:
    """User-facing errors raised below the API: bad input 422, unknown runs 404, infrastructure 503."""
    assert isinstance(exc, EvalwardError)
    status = 503 if isinstance(exc, InfrastructureError) else 422
    if isinstance(exc, GateInputError) and "is not in the history database" in str(exc):
        status = 404
    return error_response(status, str(exc))


def api_routes() -> list[Route]:
    return [
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/api/v1/runs", upload_run, methods=["POST"]),
        Route("/api/v1/repos/{owner}/{repo}/runs", list_repo_runs, methods=["GET"]),
        Route("/api/v1/runs/{run_id}", get_run, methods=["GET"]),
        Route("/api/v1/runs/{run_id}/baseline", baseline_for_run, methods=["POST"]),
        Route("/api/v1/runs/{run_id}/verdicts", record_run_verdict, methods=["POST"]),
        Route("/api/v1/runs/{run_id}/verdicts", list_run_verdicts, methods=["GET"]),
        Route("/api/v1/runs/{run_id}/compare", compare, methods=["GET"]),
        Route("/api/v1/repos/{owner}/{repo}/cases/{case_id:path}/history", case_history, methods=["GET"]),
        Route("/api/v1/jobs", list_jobs, methods=["GET"]),
    ]


# -- OpenAPI -------------------------------------------------------------------------------------------

_ERROR = {"$ref": "#/components/schemas/Error"}


def _responses(ok: str, *errors: int, ok_status: str = "200") -> dict[str, Any]:
    names = {400: "Bad request", 401: "No or wrong token", 403: "Token not allowed", 404: "Not found",
             408: "Body too slow", 409: "Already stored", 413: "Too large", 422: "Invalid content"}  # fmt: skip
    out: dict[str, Any] = {
        ok_status: {"description": ok, "content": {"application/json": {"schema": {"type": "object"}}}}
    }
    for status in errors:
        out[str(status)] = {"description": names[status], "content": {"application/json": {"schema": _ERROR}}}
    return out


def _param(name: str, where: str = "query", *, required: bool = False, description: str = "") -> dict[str, Any]:
    return {"name": name, "in": where, "required": required or where == "path", "schema": {"type": "string"},
            "description": description}  # fmt: skip


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 description of the API (hand-written next to the routes it describes)."""
    read: list[dict[str, list[str]]] = [{"readToken": []}]
    owner_repo = [_param("owner", "path"), _param("repo", "path")]
    limit = _param("limit", description=f"1..{MAX_LIMIT}, default 50")
    return {
        "openapi": "3.1.0",
        "info": {"title": "evalward server API", "version": __version__},
        "components": {
            "securitySchemes": {
                "readToken": {"type": "http", "scheme": "bearer", "description": "read token (unless public)"},
                "uploadToken": {"type": "http", "scheme": "bearer", "description": "per-repository upload token"},
            },
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {
                        "error": {
                            "type": "object",
                            "required": ["status", "message"],
                            "properties": {"status": {"type": "integer"}, "message": {"type": "string"}},
                        }
                    },
                }
            },
        },
        "paths": {
            "/api/v1/runs": {
                "post": {
                    "operationId": "uploadRun",
                    "summary": "Upload a run (the JSON `evalward run --json` writes); append-only.",
                    "security": [{"uploadToken": []}],
                    "requestBody": {"required": True, "content": {"application/json": {"schema": {"type": "object"}}}},
                    "responses": _responses("Stored", 400, 401, 403, 408, 409, 413, 422, ok_status="201"),
                }
            },
            "/api/v1/repos/{owner}/{repo}/runs": {
                "get": {
                    "operationId": "listRuns",
                    "summary": "Runs of a repository, newest first.",
                    "security": read,
                    "parameters": [*owner_repo, _param("branch"), _param("status"), limit],
                    "responses": _responses("Run rows", 400, 401),
                }
            },
            "/api/v1/runs/{run_id}": {
                "get": {
                    "operationId": "getRun",
                    "summary": "One stored run with every case result.",
                    "security": read,
                    "parameters": [_param("run_id", "path")],
                    "responses": _responses("The run", 400, 401, 404),
                }
            },
            "/api/v1/runs/{run_id}/baseline": {
                "post": {
                    "operationId": "selectBaseline",
                    "summary": "Select a stored run's baseline from the merge-base and ancestors the caller sends.",
                    "security": [{"uploadToken": []}, {"readToken": []}],
                    "parameters": [_param("run_id", "path")],
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": BaselineQuery.model_json_schema()}},
                    },
                    "responses": _responses(
                        "The search and the base branch's flip rates", 400, 401, 403, 404, 408, 413, 422
                    ),
                }
            },
            "/api/v1/runs/{run_id}/verdicts": {
                "post": {
                    "operationId": "recordVerdict",
                    "summary": "Keep the verdict that gated an uploaded run (shown by the dashboard).",
                    "security": [{"uploadToken": []}],
                    "parameters": [_param("run_id", "path")],
                    "requestBody": {"required": True, "content": {"application/json": {"schema": {"type": "object"}}}},
                    "responses": _responses("Recorded", 400, 401, 403, 404, 408, 413, 422, ok_status="201"),
                },
                "get": {
                    "operationId": "listVerdicts",
                    "summary": "The verdicts recorded for a run (by the CI job, `evalward gate` or the daemon), newest first.",
                    "security": read,
                    "parameters": [_param("run_id", "path")],
                    "responses": _responses("Recorded verdicts", 400, 401, 404),
                },
            },
            "/api/v1/runs/{run_id}/compare": {
                "get": {
                    "operationId": "compareRun",
                    "summary": "Gate a run against a baseline: auto, none, RUN_ID, commit:SHA or branch:NAME.",
                    "security": read,
                    "parameters": [_param("run_id", "path"), _param("baseline"), _param("allow_mismatch")],
                    "responses": _responses("The verdict", 400, 401, 404, 422),
                }
            },
            "/api/v1/repos/{owner}/{repo}/cases/{case_id}/history": {
                "get": {
                    "operationId": "caseHistory",
                    "summary": "One case's mean score per metric in each complete run, oldest first.",
                    "security": read,
                    "parameters": [*owner_repo, _param("case_id", "path"), _param("metric"), _param("branch"), limit],
                    "responses": _responses("History points", 400, 401),
                }
            },
            "/api/v1/jobs": {
                "get": {
                    "operationId": "listJobs",
                    "summary": "Daemon jobs, newest first.",
                    "security": read,
                    "parameters": [_param("status"), _param("repo"), limit],
                    "responses": _responses("Jobs", 400, 401),
                }
            },
        },
    }
