"""Load an eval file one case at a time into an `IndexedCases`, with the problems the whole-file path reports.

Streamed, whatever their size (so a small file and a large one take the same path):
- an ADK eval set (a top-level object whose `eval_cases` is an array) → `adk_evalset.map_case` per element;
- a top-level JSON array, or a `.jsonl` file, of LangSmith examples or multi-agent cases (detected from the
  first element, as `detect` does) → `langsmith.map_example` / `multi_agent_cases.map_agent_case`.

Everything else is read whole: YAML files (`documents.parse_text`), JSON objects that are not ADK eval sets
(native and pydantic-evals files, ADK legacy files: small by nature; a legacy test file is one case),
langchain-benchmarks lists (recognised by any element, and their per-case metrics are replaced in place by
`--metrics-mode replace`), and files whose problems only the whole-file reader reports as they must be
reported (`json_stream.WholeFile`). A JSON object the walk has read and checked whole is handed back as a
`Document` (`WalkedDocument`): decoding it a second time and indexing the position of every value
(`positions.index_json`) was half of loading a 2,000-case native file; its positions are found when asked
for (`locate.LocatedIndex`), as a streamed case's are.

Each element is decoded and checked (`json_stream`), mapped with positions found on demand (`locate`), and
its facts kept (`indexed.IndexBuilder`); the `EvalCase` itself is let go. Problems come out in the
whole-file order: the eval set's own keys first, then each case's, in file order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from evalward.loaders.detect import detect_format, detect_list_format, has_expected_steps
from evalward.loaders.documents import Document, DocumentKind, SourceText
from evalward.loaders.indexed_cases import RECENT_CASES, WHOLE_SET, IndexBuilder
from evalward.loaders.json_stream import Element, JsonlWalk, JsonWalk, WholeFile, exceeds
from evalward.loaders.locate import LocatedIndex
from evalward.loaders.positions import DEFAULT_LIMITS, PathKey, Position, PositionIndex
from evalward.loaders.problems import Problems
from evalward.model import EvalCase, EvalFormat, EvalSet

_ADK_CASES = "eval_cases"


@dataclass
class WalkedDocument:
    """A JSON object read whole by the walk, checked as `documents.parse_text` checks a file: for the
    whole-file loaders (`load._load_whole`)."""

    document: Document


@dataclass
class Streamed:
    """A file loaded one case at a time: its problems (positioned against the file's top level), its format,
    and its eval set: None when unusable; an ADK set whose cases have problems is kept, as the whole-file path
    keeps it, for the id checks that follow."""

    problems: Problems
    format: EvalFormat
    eval_set: EvalSet | None


def load_streamed(
    source: SourceText, default_id: str, *, cache_size: int = RECENT_CASES, whole_set: int = WHOLE_SET
) -> Streamed | WalkedDocument | None:
    """`source` loaded one case at a time; a `WalkedDocument` or None when it is to be read whole, the first
    already read (module docstring). Raises `documents.DocumentError` for syntax and structure problems."""
    if source.suffix in (".yaml", ".yml"):
        return None
    try:
        if source.suffix == ".jsonl":
            return _load_list(source, JsonlWalk(source.text, source.shown), "jsonl", default_id, cache_size, whole_set)
        walk = JsonWalk(source.text, source.shown, case_key=_ADK_CASES)
        if source.text[walk.root] == "{":
            return _load_adk(source, walk, default_id, cache_size, whole_set)
        return _load_list(source, walk, "json", default_id, cache_size, whole_set)
    except WholeFile:
        return None


def _load_adk(
    source: SourceText, walk: JsonWalk, default_id: str, cache_size: int, whole_set: int
) -> Streamed | WalkedDocument:
    from evalward.loaders import adk_evalset  # start-up: the ADK file models, when an ADK file is read

    builder = IndexBuilder(
        source,
        kind="json",
        prefix=(_ADK_CASES,),
        mapper=adk_evalset.map_case,
        cache_size=cache_size,
        whole_set=whole_set,
    )
    outer = _Outer(walk)
    case_problems = _map_all(walk, walk.elements(), builder, source, outer)
    walk.finish()
    if detect_format(walk.top) != "adk_evalset":
        return _walked_document(source, walk, outer)  # a native file: small by nature, read whole
    problems = Problems(Document(path=source.shown, data=walk.top, index=outer.index(), kind="json"))
    shell, cases_key = adk_evalset.evalset_head(problems)
    if cases_key != _ADK_CASES:
        raise WholeFile  # cases under a camelCase key are reported, never loaded: the whole-file path does that
    problems.items.extend(case_problems.items)
    problems.warnings.extend(case_problems.warnings)
    eval_set = None if shell is None else adk_evalset.evalset_from_head(shell, default_id, [])
    return Streamed(problems, "adk_evalset", _with_cases(eval_set, builder))


def _load_list(
    source: SourceText,
    walk: JsonWalk | JsonlWalk,
    kind: DocumentKind,
    default_id: str,
    cache_size: int,
    whole_set: int,
) -> Streamed:
    elements = walk.elements()
    first = next(elements, None)
    if first is None or walk.troubled:
        for _ in elements:  # the walk's problems are the file's, whatever its format
            pass
        walk.finish()
        raise WholeFile  # an empty list: not a recognised format, as the whole-file path says
    fmt = detect_list_format(first.value, any_expected_steps=False)
    if fmt != "langsmith" and fmt != "multi_agent":
        raise WholeFile  # unrecognised, or a list format read whole
    # Imported here: an ADK eval set's run needs neither module nor the pydantic models they build.
    from evalward.loaders import langsmith, multi_agent_cases  # start-up: only for these formats' files

    mapper = langsmith.map_example if fmt == "langsmith" else multi_agent_cases.map_agent_case
    builder = IndexBuilder(source, kind=kind, prefix=(), mapper=mapper, cache_size=cache_size, whole_set=whole_set)
    defaults = langsmith.DefaultCriteria()
    outer = _Outer(walk) if isinstance(walk, JsonWalk) else None
    problems = _map_all(walk, _chain(first, elements), builder, source, outer, list_items=True, seen=defaults.add)
    walk.finish()
    problems.document = Document(path=source.shown, data=[], index=_top_index(outer), kind=kind)
    if problems.items:  # these formats give no set once a case is unusable
        return Streamed(problems, fmt, None)
    eval_set = (
        langsmith.langsmith_set(default_id, [], defaults)
        if fmt == "langsmith"
        else multi_agent_cases.multi_agent_set(default_id, [])
    )
    return Streamed(problems, fmt, _with_cases(eval_set, builder))


def _map_all(
    walk: JsonWalk | JsonlWalk,
    elements: Iterator[Element],
    builder: IndexBuilder,
    source: SourceText,
    outer: _Outer | None,
    *,
    list_items: bool = False,
    seen: Callable[[EvalCase], None] | None = None,
) -> Problems:
    """Map every element while the walk has found no problem (`seen` is shown each case); the problems of all
    of them, in order."""
    found = Problems(Document(path=source.shown, data=None, index=PositionIndex(), kind=builder.kind))
    for element in elements:
        if list_items and has_expected_steps(element.value):
            raise WholeFile  # a langchain-benchmarks list after all (detect's rule 4 looks at every item)
        if walk.troubled:
            continue  # only the walk's problem is reported: mapping more would report more
        index = LocatedIndex(
            walk.text,
            element.start,
            prefix=element.path,
            base=element.start,
            line=element.line,
            column=element.column,
            outer=outer,
        )
        problems = Problems(
            Document(path=source.shown, data=element.value, index=index, kind=builder.kind), found.items, found.warnings
        )
        case = builder.mapper(problems, element.value, element.path)
        if case is None:
            continue
        if seen is not None:
            seen(case)
        builder.add(case, element.position, element.start, element.end, element.line, element.column)
    return found


def _walked_document(source: SourceText, walk: JsonWalk, outer: _Outer) -> WalkedDocument:
    """The object the walk read, as the whole-file reader would have read it; WholeFile when the walk left a
    part of it undecoded (an `eval_cases` array it mapped case by case) or cannot vouch for a limit."""
    if walk.cases_at is not None:
        raise WholeFile
    # The walk checks each top-level value against the value limit on its own; the whole-file reader counts
    # the file's values together. A file of fewer characters than the limit cannot hold more values.
    if len(source.text) > DEFAULT_LIMITS.max_values and exceeds(walk.top, 0, DEFAULT_LIMITS):
        raise WholeFile
    return WalkedDocument(Document(path=source.shown, data=walk.top, index=outer.index(), kind="json"))


def _with_cases(eval_set: EvalSet | None, builder: IndexBuilder) -> EvalSet | None:
    if eval_set is not None:
        eval_set.cases = builder.build()
    return eval_set


def _chain(first: Element, rest: Iterator[Element]) -> Iterator[Element]:
    yield first
    yield from rest


class _Outer(PositionIndex):
    """Positions outside the case being mapped (the file's top level), from the walk's own scan of the top-level
    object and of the case list, made when first asked for (most files never ask)."""

    def __init__(self, walk: JsonWalk) -> None:
        super().__init__()
        self._walk = walk
        self._index: LocatedIndex | None = None

    def index(self) -> LocatedIndex:
        if self._index is not None:
            return self._index
        walk = self._walk
        items = {walk.cases_at: walk.case_starts} if walk.cases_at is not None else {}
        index = LocatedIndex(walk.text, walk.root, members={walk.root: walk.members}, items=items)
        if walk.finished:  # kept only once the walk has seen the whole top level
            self._index = index
        return index

    def value_at(self, path: PathKey) -> Position | None:
        return self.index().value_at(path)

    def key_at(self, path: PathKey) -> Position | None:
        return self.index().key_at(path)


def _top_index(outer: _Outer | None) -> PositionIndex:
    return outer.index() if outer is not None else PositionIndex()
