"""Collect every problem in a file, each pointing at a line, column and JSON path.

Pydantic reports errors by `loc` tuples over *model fields*; `Problems.validation` translates them back
to the document: a loc element that names a key present in the data (as given, or its camelCase /
snake_case twin) or an index in range is followed; any other element (a union tag) is skipped, except
the last, which names a missing or unknown key. Unknown-key problems point at the key itself and list
the keys the model accepts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel, to_snake

from evalward.errors import FileProblem
from evalward.loaders.documents import Document
from evalward.loaders.positions import PathKey, format_json_path
from evalward.metrics.metric_options import allowed_keys
from evalward.model import SourceLocation

ModelT = TypeVar("ModelT", bound=BaseModel)

_FOUND_LIMIT = 80


def describe_value(value: Any) -> str:
    """`string "abc"`, `number 3`, `object {…}`: a short, typed rendering for `found`."""
    kind = {
        dict: "object",
        list: "array",
        str: "string",
        bool: "boolean",
        int: "number",
        float: "number",
        type(None): "null",
    }.get(type(value), type(value).__name__)
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > _FOUND_LIMIT:
        text = text[: _FOUND_LIMIT - 1] + "…"
    return f"{kind} {text}"


@dataclass
class Problems:
    """The problems (and warnings) found in one document."""

    document: Document
    items: list[FileProblem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    _last_source: tuple[Document, PathKey, SourceLocation] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def path(self) -> str:
        return self.document.path

    def add(
        self,
        message: str,
        at: PathKey = (),
        *,
        on_key: bool = False,
        case_id: str | None = None,
        expected: str | None = None,
        found: str | None = None,
    ) -> None:
        """Record a problem at the value (or, with `on_key`, the key) found at `at`."""
        index = self.document.index
        position = index.key_at(at) if on_key else index.value_at(at)
        self.items.append(
            FileProblem(
                path=self.path,
                message=message,
                line=position.line if position else None,
                column=position.column if position else None,
                json_path=format_json_path(at),
                case_id=case_id,
                expected=expected,
                found=found,
            )
        )

    def warn(self, message: str, at: PathKey = ()) -> None:
        """Record a warning at the key (or value) found at `at`."""
        position = self.document.index.key_at(at)
        where = self.path if position is None else f"{self.path}:{position.line}:{position.column}"
        self.warnings.append(f"{where}: {message}")

    def source(self, at: PathKey) -> SourceLocation:
        """Where the value at `at` starts, for `EvalCase.source` / `Invocation.source`. The same (frozen) object
        for the same path asked twice in a row: a one-turn case's turn is where its case is."""
        last = self._last_source
        if last is not None and last[0] is self.document and last[1] == at:
            return last[2]
        position = self.document.index.value_at(at)
        # Built from values this loader computed (one per case and per turn): not validated again.
        source = SourceLocation.model_construct(
            path=self.path,
            line=position.line if position else None,
            column=position.column if position else None,
            json_path=format_json_path(at),
        )
        self._last_source = (self.document, at, source)
        return source

    def validate(
        self, model: type[ModelT], data: Any, at: PathKey = (), *, case_id: str | None = None
    ) -> ModelT | None:
        """Validate `data` (found at `at`) as `model`; record every error and return None on failure."""
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            self.validation(exc, model, data, at, case_id=case_id)
            return None

    def validation(
        self, exc: ValidationError, model: type[BaseModel], data: Any, at: PathKey, *, case_id: str | None
    ) -> None:
        for error in exc.errors(include_url=False):
            loc = tuple(error["loc"])
            path, rest = _follow(data, loc)
            kind = error["type"]
            if kind == "missing" and rest:
                name = str(rest[-1])
                self.add(f"missing required key '{name}'", (*at, *path), case_id=case_id, expected=f"key '{name}'")
            elif kind == "extra_forbidden" and loc:
                # The unknown key is in the data, so `path` already ends with it.
                name = str(loc[-1])
                allowed = allowed_keys(model, loc[:-1])
                self.add(
                    f"unknown key '{name}'",
                    (*at, *path),
                    on_key=True,
                    case_id=case_id,
                    expected="one of " + ", ".join(allowed) if allowed else None,
                    found=f"'{name}'",
                )
            else:
                message = str(error["msg"]).removeprefix("Value error, ")
                found = None if kind.startswith("value_error") else describe_value(error.get("input"))
                self.add(message, (*at, *path), case_id=case_id, found=found)


def _follow(data: Any, loc: Sequence[str | int]) -> tuple[PathKey, PathKey]:
    """Map a pydantic loc onto the data: the path that exists, and the loc elements left unmatched."""
    path: list[str | int] = []
    current = data
    for position, part in enumerate(loc):
        last = position == len(loc) - 1
        if isinstance(current, dict):
            key = _matching_key(current, part)
            if key is not None:
                path.append(key)
                current = current[key]
                continue
            if last:
                return tuple(path), (part,)
            continue  # a union tag or validator name: not part of the document
        if isinstance(current, list | tuple) and isinstance(part, int) and 0 <= part < len(current):
            path.append(part)
            current = current[part]
            continue
        if last and isinstance(part, str) and not isinstance(current, dict):
            return tuple(path), ()
    return tuple(path), ()


def _matching_key(mapping: dict[Any, Any], part: str | int) -> str | None:
    if not isinstance(part, str):
        return None
    for candidate in (part, to_camel(part), to_snake(part)):
        if candidate in mapping:
            return candidate
    return None
