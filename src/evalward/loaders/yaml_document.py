"""YAML files for `loaders.documents`, in a module of their own so PyYAML is imported only when one is read."""

from __future__ import annotations

from typing import Any

import yaml

from evalward.errors import FileProblem
from evalward.loaders.documents import Document, DocumentError
from evalward.loaders.positions import DEFAULT_LIMITS, StructureError, StructureLimits, index_yaml


class _LimitExceeded(yaml.MarkedYAMLError):
    """A `StructureLimits` limit broken while composing YAML: reported as itself, not as a syntax error."""


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, stopped while composing once the document is too deep, has too many nodes or
    uses too many aliases: composition is where an alias bomb or a huge document would otherwise cost time
    and memory (every later stage sees the aliased node again, and again)."""

    def __init__(self, text: str, limits: StructureLimits = DEFAULT_LIMITS) -> None:
        super().__init__(text)
        self.limits = limits
        self.depth = 0
        self.nodes = 0
        self.aliases = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        limits = self.limits
        mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > limits.max_aliases:
                raise _LimitExceeded(
                    problem=f"more than {limits.max_aliases} aliases (*name) in one document", problem_mark=mark
                )
        self.nodes += 1
        if self.nodes > limits.max_yaml_nodes:
            raise _LimitExceeded(problem=f"more than {limits.max_yaml_nodes:,} YAML values", problem_mark=mark)
        self.depth += 1
        try:
            if self.depth > limits.max_depth:
                raise _LimitExceeded(
                    problem=f"values are nested more than {limits.max_depth} levels deep", problem_mark=mark
                )
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def parse_yaml(text: str, shown: str) -> Document:
    """The YAML file `shown`, composed under `DEFAULT_LIMITS`, checked and indexed before construction."""
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise DocumentError([FileProblem(path=shown, message="the file is empty", expected="an eval file")])
        # Checked (and positions recorded) before construction: it refuses alias bombs and huge integers.
        index = index_yaml(node)
        data = loader.construct_document(node)
    except _LimitExceeded as exc:
        mark = exc.problem_mark
        raise DocumentError(
            [
                FileProblem(
                    path=shown,
                    message=exc.problem or "the document is too large",
                    line=mark.line + 1 if mark else None,
                    column=mark.column + 1 if mark else None,
                )
            ]
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise DocumentError(
            [
                FileProblem(
                    path=shown,
                    message=f"invalid YAML: {exc.problem or exc.context or 'syntax error'}",
                    line=mark.line + 1 if mark else None,
                    column=mark.column + 1 if mark else None,
                    expected="valid YAML",
                )
            ]
        ) from None
    except yaml.YAMLError as exc:
        raise DocumentError([FileProblem(path=shown, message=f"invalid YAML: {exc}", expected="valid YAML")]) from None
    except StructureError:
        raise  # located by `parse_text`
    except (ValueError, OverflowError) as exc:
        # A scalar the resolver typed but cannot convert (`2024-13-45` as a date).
        raise DocumentError(
            [FileProblem(path=shown, message=f"invalid YAML value: {exc}", expected="valid YAML")]
        ) from None
    finally:
        loader.dispose()
    return Document(path=shown, data=data, index=index, kind="yaml")
