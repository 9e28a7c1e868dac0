"""Regenerate `github-rest-subset.json` from GitHub's REST OpenAPI description (npm `@octokit/openapi`).

Usage (outside the repository, then copy the result in):

    mkdir /tmp/oapi && cd /tmp/oapi && npm pack @octokit/openapi@23.0.2 && tar xzf octokit-openapi-*.tgz
    python tests/fakes/data/extract_github_subset.py /tmp/oapi/package > tests/fakes/data/github-rest-subset.json

Keeps, for each operation evalward calls, its method, path template, parameters and request-body schema
with every `$ref` inlined. Response schemas are dropped: the contract test checks what we send.

Also `webhook-examples-subset.json` from npm `@octokit/webhooks-examples` (real payloads for the event
readers): `npm pack @octokit/webhooks-examples@7.6.1`, unpack into another folder, then

    python tests/fakes/data/extract_github_subset.py --webhooks /tmp/wh/package > tests/fakes/data/webhook-examples-subset.json

keeps the events evalward reads (one pull_request example per action, every example of the others) and
drops `*_url`, `url`, `_links` and `body` keys to keep the file small; every other field stays as GitHub sent it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

OPERATION_IDS = (
    "issues/list-comments",
    "issues/create-comment",
    "issues/update-comment",
    "issues/delete-comment",
    "issues/remove-label",
    "repos/create-commit-status",
    "checks/create",
    "checks/update",
    "checks/rerequest-run",
    "checks/rerequest-suite",
    "pulls/get",
    "pulls/list-files",
    "repos/compare-commits-with-basehead",
    "apps/get-authenticated",
    "apps/get-repo-installation",
    "apps/create-installation-access-token",
    "apps/list-webhook-deliveries",
    "apps/redeliver-webhook-delivery",
    "checks/list-for-ref",
    "repos/get-collaborator-permission-level",
)
HTTP_METHODS = ("get", "put", "post", "patch", "delete")


def _resolve(node: Any, root: dict[str, Any], seen: tuple[str, ...] = ()) -> Any:
    """`node` with every local `$ref` replaced by a copy of its target (cycles raise)."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            if ref in seen:
                raise ValueError(f"cyclic $ref {ref}")
            target: Any = root
            for part in ref.removeprefix("#/").split("/"):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            return _resolve(target, root, (*seen, ref))
        return {key: _resolve(value, root, seen) for key, value in node.items()}
    if isinstance(node, list):
        return [_resolve(item, root, seen) for item in node]
    return node


def extract(package_dir: Path) -> dict[str, Any]:
    spec = json.loads((package_dir / "generated" / "api.github.com.json").read_text(encoding="utf-8"))
    version = json.loads((package_dir / "package.json").read_text(encoding="utf-8"))["version"]
    operations: list[dict[str, Any]] = []
    for path, item in spec["paths"].items():
        for method in HTTP_METHODS:
            op = item.get(method)
            if not op or op.get("operationId") not in OPERATION_IDS:
                continue
            params = [_resolve(p, spec) for p in [*item.get("parameters", []), *op.get("parameters", [])]]
            body = op.get("requestBody")
            body_schema = None
            body_required = False
            if body:
                body = _resolve(body, spec)
                body_required = bool(body.get("required", False))
                body_schema = body["content"]["application/json"]["schema"]
            operations.append(
                {
                    "operationId": op["operationId"],
                    "method": method.upper(),
                    "path": path,
                    "deprecated": bool(op.get("deprecated", False)),
                    "parameters": [
                        {key: p[key] for key in ("name", "in", "required", "schema", "x-multi-segment") if key in p}
                        for p in params
                    ],
                    "requestBodyRequired": body_required,
                    "requestBodySchema": body_schema,
                }
            )
    found = {op["operationId"] for op in operations}
    missing = sorted(set(OPERATION_IDS) - found)
    if missing:
        raise SystemExit(f"operations not found in the description: {missing}")
    operations.sort(key=lambda op: (op["path"], op["method"]))
    return {
        "source": "npm @octokit/openapi, generated/api.github.com.json",
        "package_version": version,
        "openapi": spec["openapi"],
        "operations": operations,
    }


WEBHOOK_EVENTS = ("pull_request", "push", "check_run", "check_suite", "installation", "installation_repositories")


def _strip_bulk(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            key: _strip_bulk(value)
            for key, value in node.items()
            if not (key.endswith("_url") or key in ("url", "_links", "body"))
        }
    if isinstance(node, list):
        return [_strip_bulk(item) for item in node]
    return node


def extract_webhooks(package_dir: Path) -> dict[str, Any]:
    events = json.loads((package_dir / "api.github.com" / "index.json").read_text(encoding="utf-8"))
    version = json.loads((package_dir / "package.json").read_text(encoding="utf-8"))["version"]
    examples: dict[str, list[Any]] = {}
    for event in events:
        if event["name"] not in WEBHOOK_EVENTS:
            continue
        chosen = event["examples"]
        if event["name"] == "pull_request":
            seen: set[str] = set()
            chosen = [e for e in chosen if not (e.get("action") in seen or seen.add(e.get("action")))]
        examples[event["name"]] = [_strip_bulk(example) for example in chosen]
    return {
        "source": "npm @octokit/webhooks-examples, api.github.com/index.json (bulky keys stripped)",
        "package_version": version,
        "examples": examples,
    }


if __name__ == "__main__":
    webhooks = sys.argv[1] == "--webhooks"
    result = extract_webhooks(Path(sys.argv[2])) if webhooks else extract(Path(sys.argv[1]))
    json.dump(result, sys.stdout, indent=None if webhooks else 1, sort_keys=True, ensure_ascii=False)
    sys.stdout.write("\n")
