"""The request bodies of the API's POST endpoints (`api.py`): read once the caller is authenticated, capped,
and parsed off the event loop.

`read_body` reads at most `limit` bytes — `max_upload_bytes` for runs, `MAX_VERDICT_BYTES` for verdicts,
`MAX_BASELINE_QUERY_BYTES` for baseline queries — answering 413 as soon as the body is over (without reading
the rest) and 408 past `body_timeout_s`. The `parse_*` functions turn a body into its model (400 for a body
that is not JSON, nests too deep or holds a NUL character; 422 for one that does not validate); the endpoints
call them through `boundary.off_loop`, so a large body is parsed in a worker thread.
"""

from __future__ import annotations

from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request

from evalward._server.boundary import MIB, BadRequest, BodyTimeout, PayloadTooLarge, load_json, read_body_capped
from evalward.errors import EvalFileError, GateInputError, UsageError
from evalward.model import SCHEMA_VERSION, RunResult
from evalward.model.results import PER_CASE_FIELDS, CaseResult, CaseSummary
from evalward.model.verdict import Verdict
from evalward.remote_history import BaselineQuery
from evalward.run_json import load_run_json

MAX_VERDICT_BYTES = 16 * MIB
MAX_BASELINE_QUERY_BYTES = 1 * MIB


async def read_body(request: Request, limit: int, what: str) -> bytes:
    """The body, once the caller is authenticated: 413 past `limit` (unread beyond), 408 past `body_timeout_s`."""
    timeout_s = request.app.state.server.settings.body_timeout_s
    try:
        return await read_body_capped(request, limit, timeout_s=timeout_s, what=what)
    except PayloadTooLarge as exc:
        raise HTTPException(413, str(exc)) from None
    except BodyTimeout as exc:
        raise HTTPException(408, str(exc)) from None


def checked_json(body: bytes | str) -> None:
    """400 for a body that is not JSON, nests deeper than the boundary allows or holds a NUL character
    (`boundary.load_json`): each would otherwise fail later, in the parser's recursion or the database."""
    try:
        load_json(body, where="the request body")
    except BadRequest as exc:
        raise HTTPException(400, str(exc)) from None


def parse_run(body: bytes) -> RunResult:
    """The uploaded run, parsed once and validated a case at a time (`_validated_in_parts`): pydantic holds the
    GIL for a whole `model_validate`, so one call over a 60 MiB run would stall the event loop for seconds even
    from a worker thread. A run that does not validate so is read again by `load_run_json` for its message."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise HTTPException(400, "the body is not UTF-8 text") from None
    try:
        value = load_json(text, where="the request body")
    except BadRequest as exc:
        raise HTTPException(400, str(exc)) from None
    run = _validated_in_parts(value)
    if run is not None:
        return run
    try:
        return load_run_json(text, source="request body")
    except (EvalFileError, GateInputError, UsageError) as exc:
        raise HTTPException(422, str(exc)) from None


def _validated_in_parts(value: Any) -> RunResult | None:
    """`RunResult.model_validate(value)`, with its per-case fields validated entry by entry (the GIL is free
    between entries); None when anything does not validate, or the schema version is not one this reads."""
    from pydantic import ValidationError

    if not isinstance(value, dict):
        return None
    version = value.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= SCHEMA_VERSION:
        return None
    entries = {name: value.get(name, []) for name in PER_CASE_FIELDS}
    if not all(isinstance(items, list) for items in entries.values()):
        return None
    try:
        header = RunResult.model_validate({k: v for k, v in value.items() if k not in PER_CASE_FIELDS})
        cases = [CaseResult.model_validate(item) for item in entries["cases"]]
        summaries = [CaseSummary.model_validate(item) for item in entries["case_summaries"]]
    except ValidationError:
        return None
    return header.model_copy(update={"cases": cases, "case_summaries": summaries})


def parse_baseline_query(body: bytes) -> BaselineQuery:
    from pydantic import ValidationError

    checked_json(body or b"{}")
    try:
        return BaselineQuery.model_validate_json(body or b"{}")
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise HTTPException(422, f"invalid baseline query at {where}: {first['msg']}") from None


def parse_verdict(body: bytes) -> Verdict:
    from pydantic import ValidationError

    checked_json(body)
    try:
        return Verdict.model_validate_json(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise HTTPException(422, f"invalid verdict at {where}: {first['msg']}") from None
