"""Check requests recorded by the fake GitHub against GitHub's REST description (docs/github.md §13).

The description is the vendored subset `tests/fakes/data/github-rest-subset.json` (from npm
`@octokit/openapi`; see `extract_github_subset.py`). For each request: a path template matches
(`x-multi-segment` parameters may contain `/`, non-deprecated operations preferred), the method, integer
path parameters, declared query parameters and their types, body presence, the body against its JSON
Schema (OpenAPI 3.0 `nullable` → JSON Schema `null`), body keys the schema does not declare (GitHub's
schemas never say `additionalProperties: false`, so a typo like `ouput` would pass silently), the
version headers, and the limits the description lacks (65,536-character comments, 140-character status
descriptions, annotation title/message/columns, 50 annotations per request, conclusion rules).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft4Validator

from fakes.github_server import RecordedRequest

SUBSET = Path(__file__).resolve().parents[1] / "fakes" / "data" / "github-rest-subset.json"


@dataclass(frozen=True)
class Operation:
    operation_id: str
    method: str
    template: str
    pattern: re.Pattern[str]
    deprecated: bool
    path_params: dict[str, dict[str, Any]]
    query_params: dict[str, dict[str, Any]]
    body_required: bool
    body_schema: dict[str, Any] | None


def openapi_to_jsonschema(node: Any) -> Any:
    """OpenAPI 3.0 schema → JSON Schema: `nullable: true` becomes an allowed `null`."""
    if isinstance(node, list):
        return [openapi_to_jsonschema(item) for item in node]
    if not isinstance(node, dict):
        return node
    converted = {key: openapi_to_jsonschema(value) for key, value in node.items() if key != "nullable"}
    if node.get("nullable") is True:
        if isinstance(converted.get("type"), str):
            converted["type"] = [converted["type"], "null"]
            if "enum" in converted:
                converted["enum"] = [*converted["enum"], None]
        else:
            converted = {"anyOf": [converted, {"type": "null"}]}
    return converted


@cache
def load_subset() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SUBSET.read_text(encoding="utf-8"))
    return data


@cache
def operations() -> tuple[Operation, ...]:
    result = []
    for op in load_subset()["operations"]:
        params = op["parameters"]
        multi = {p["name"] for p in params if p.get("x-multi-segment")}
        regex = re.sub(
            r"\{([^}]+)\}",
            lambda m, multi=multi: f"(?P<{m.group(1)}>.+)" if m.group(1) in multi else f"(?P<{m.group(1)}>[^/]+)",
            op["path"],
        )
        schema = op["requestBodySchema"]
        result.append(
            Operation(
                operation_id=op["operationId"],
                method=op["method"],
                template=op["path"],
                pattern=re.compile(regex),
                deprecated=op["deprecated"],
                path_params={p["name"]: p for p in params if p["in"] == "path"},
                query_params={p["name"]: p for p in params if p["in"] == "query"},
                body_required=op["requestBodyRequired"],
                body_schema=openapi_to_jsonschema(schema) if schema else None,
            )
        )
    # Non-deprecated first, then longer (more specific) templates first.
    return tuple(sorted(result, key=lambda o: (o.deprecated, -len(o.template))))


def match_operation(method: str, path: str) -> tuple[Operation, dict[str, str]] | None:
    for op in operations():
        found = op.pattern.fullmatch(path)
        if op.method == method and found:
            return op, found.groupdict()
    return None


def _type_ok(value: str, schema: dict[str, Any]) -> bool:
    if schema.get("type") == "integer":
        return re.fullmatch(r"-?\d+", value) is not None
    return True


def undeclared_keys(body: Any, schema: dict[str, Any] | None, where: str = "body") -> list[str]:
    """Keys of `body` objects that no `properties` of the (possibly anyOf/oneOf) schema declares."""
    if schema is None:
        return []
    problems: list[str] = []
    branches = [schema, *schema.get("anyOf", []), *schema.get("oneOf", []), *schema.get("allOf", [])]
    if isinstance(body, dict):
        declared: dict[str, Any] = {}
        for branch in branches:
            declared.update(branch.get("properties", {}))
        if declared:
            for key, value in body.items():
                if key not in declared:
                    problems.append(f"{where}: undeclared key {key!r}")
                else:
                    problems += undeclared_keys(value, declared[key], f"{where}.{key}")
    elif isinstance(body, list):
        for branch in branches:
            if isinstance(branch.get("items"), dict):
                for index, item in enumerate(body):
                    problems += undeclared_keys(item, branch["items"], f"{where}[{index}]")
                break
    return problems


def _limits(op: Operation, body: Any) -> list[str]:
    """GitHub's limits that the OpenAPI description does not state (docs/github.md §8)."""
    problems: list[str] = []
    if not isinstance(body, dict):
        return problems
    comment = body.get("body")
    is_comment = op.operation_id in ("issues/create-comment", "issues/update-comment")
    if is_comment and isinstance(comment, str) and len(comment) > 65_536:
        problems.append(f"comment body has {len(comment)} characters (max 65,536)")
    if op.operation_id == "repos/create-commit-status":
        description = body.get("description")
        if isinstance(description, str) and len(description) > 140:
            problems.append(f"status description has {len(description)} characters (max 140)")
    if op.operation_id in ("checks/create", "checks/update"):
        conclusion, status = body.get("conclusion"), body.get("status")
        if conclusion == "stale":
            problems.append("conclusion 'stale' is set by GitHub only")
        if conclusion is not None and status not in (None, "completed"):
            problems.append(f"a conclusion forces status 'completed', found status {status!r}")
        if status == "completed" and conclusion is None:
            problems.append("status 'completed' needs a conclusion")
        output = body.get("output")
        if isinstance(output, dict):
            if op.operation_id == "checks/create" and not (output.get("title") and output.get("summary")):
                problems.append("output.title and output.summary are required on create")
            for key in ("summary", "text"):
                if isinstance(output.get(key), str) and len(output[key]) > 65_535:
                    problems.append(f"output.{key} has {len(output[key])} characters (max 65,535)")
            annotations = output.get("annotations") or []
            if len(annotations) > 50:
                problems.append(f"{len(annotations)} annotations in one request (max 50)")
            for index, item in enumerate(annotations):
                if len(str(item.get("title") or "")) > 255:
                    problems.append(f"annotations[{index}].title over 255 characters")
                for key in ("message", "raw_details"):
                    if len(str(item.get(key) or "").encode()) > 64 * 1024:
                        problems.append(f"annotations[{index}].{key} over 64 KB")
                has_columns = "start_column" in item or "end_column" in item
                if has_columns and item.get("start_line") != item.get("end_line"):
                    problems.append(f"annotations[{index}]: columns need start_line == end_line")
    return problems


def check_request(request: RecordedRequest) -> list[str]:
    """Every way `request` departs from GitHub's description and limits; empty when it conforms."""
    label = f"{request.method} {request.path}"
    found = match_operation(request.method, request.path)
    if found is None:
        return [f"{label}: no operation in the description matches"]
    op, path_values = found
    problems: list[str] = []
    for name, value in path_values.items():
        if not _type_ok(value, op.path_params[name].get("schema", {})):
            problems.append(f"path parameter {name}={value!r} is not a {op.path_params[name]['schema']['type']}")
    for name, values in request.query.items():
        if name not in op.query_params:
            problems.append(f"undeclared query parameter {name!r}")
            continue
        schema = op.query_params[name].get("schema", {})
        if not all(_type_ok(v, schema) for v in values):
            problems.append(f"query parameter {name}={values!r} is not a {schema.get('type')}")
        if name == "per_page" and any(int(v) > 100 for v in values if v.isdigit()):
            problems.append(f"per_page={values} exceeds 100")
    if request.headers.get("accept") != "application/vnd.github+json":
        problems.append(f"Accept header is {request.headers.get('accept')!r}")
    if request.headers.get("x-github-api-version") != "2022-11-28":
        problems.append(f"X-GitHub-Api-Version header is {request.headers.get('x-github-api-version')!r}")
    if op.body_schema is None:
        if request.body is not None:
            problems.append("a body was sent to an operation that takes none")
    elif request.body is None:
        if op.body_required:
            problems.append("the required request body is missing")
    else:
        validator = Draft4Validator(op.body_schema)
        for error in sorted(validator.iter_errors(request.body), key=lambda e: list(e.absolute_path)):
            where = "body" + "".join(f"[{p!r}]" for p in error.absolute_path)
            problems.append(f"{where}: {error.message[:300]}")
        problems += undeclared_keys(request.body, op.body_schema)
        problems += _limits(op, request.body)
    return [f"{label} ({op.operation_id}): {problem}" for problem in problems]


def check_requests(requests: list[RecordedRequest]) -> list[str]:
    return [problem for request in requests for problem in check_request(request)]
