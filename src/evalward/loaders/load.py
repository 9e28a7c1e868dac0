"""Load eval files and directories into `EvalSet`s, reporting every problem in every file at once.

Criteria per set, first that applies:
1. `config_path` given → that `test_config.json`, for every file of every format;
2. ADK formats → the `test_config.json` in the eval file's own folder (ADK `AgentEvaluator` semantics),
   else ADK's defaults (trajectory ≥ 1.0, ROUGE-1 ≥ 0.8, origin `adk_defaults`);
3. other formats → their own (`format_defaults`, or `native` for a native file's `metrics`), plus the criteria
   (typically user evaluators, `metrics.evaluators`) of a `test_config.json` in the file's folder, added to
   them (same names replaced) — or replacing them when it says `"replace_defaults": true`.
Per-case metrics (langchain-benchmarks, native) are kept in every case.

Initial session: an `initial.session.json` beside an ADK legacy test file (format A) gives its case the
`session_input` (ADK's `initial_session_file`); beside a file of another ADK format it is ignored with a
warning, since those carry their own sessions. An explicit `initial_session_path` (`--initial-session-file`)
is used instead of any file beside, for every file of every format: a case without a session gets it whole;
a case with one keeps its own, each state key and `app_name`/`user_id` it leaves unset coming from the file
(`apply_initial_session`).

Case selection: a path `FILE:ID1,ID2` (ADK's syntax, `discovery`) keeps only those cases of FILE; an id the
file does not have is a problem listing the ids it has. `LoadedEvalSets.selection` says what was selected.

Reading: ADK eval sets and LangSmith / multi-agent lists (JSON or JSONL) are read one case at a time
(`streamed`), whatever their size, and their cases are kept as an index that reads each case back from the
file on demand (`indexed.IndexedCases`); they report exactly the problems reading them whole would. Other
files are read whole (`documents`).

pydantic-evals Dataset files name their own evaluator classes by class name only: `custom_evaluator_types`
(`pkg.module:Class` paths, the `custom_evaluator_types` setting of `evalward.toml`) says which classes those
are, as `Dataset.from_file(custom_evaluator_types=...)` does (`loaders.pydantic_evals_dataset`).

Case and eval set ids must be printable (no C0 control characters or DEL: they reach logs, workflow
commands and PostgreSQL, which refuses NUL). Case ids must be unique within a set. Two sets with the same id are allowed, with a warning, since results
are keyed by set and case id.
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evalward.errors import CONTROL_CHARACTER, EvalFileError, FileProblem
from evalward.loaders.detect import KNOWN_SHAPES, describe_shape, detect_format
from evalward.loaders.discovery import CONFIG_FILE_NAME, INITIAL_SESSION_FILE_NAME, discover, eval_set_stem
from evalward.loaders.documents import Document, DocumentError, parse_source, read_document, read_source
from evalward.loaders.problems import Problems
from evalward.loaders.streamed import Streamed, load_streamed
from evalward.loaders.test_config import adk_default_criteria, read_test_config
from evalward.model import Criteria, EvalCase, EvalFormat, EvalSet, SessionInput
from evalward.model.cases import case_ids, case_source, edit_cases, keep_ids
from evalward.model.text import listed_ids

ADK_FORMATS: frozenset[EvalFormat] = frozenset({"adk_evalset", "adk_legacy_test", "adk_legacy_evalset"})

_FormatLoader = Callable[[Problems, str], EvalSet | None]
# format -> (module, function). Each format's module (and the pydantic models it builds as it is imported) is
# imported only when a file of that format is read: a run of ADK eval sets never loads the other five.
_LOADERS: dict[EvalFormat, tuple[str, str]] = {
    "adk_evalset": ("evalward.loaders.adk_evalset", "load_adk_evalset"),
    "adk_legacy_test": ("evalward.loaders.adk_legacy", "load_legacy_test"),
    "adk_legacy_evalset": ("evalward.loaders.adk_legacy", "load_legacy_evalset"),
    "langsmith": ("evalward.loaders.langsmith", "load_langsmith"),
    "langchain_benchmarks": ("evalward.loaders.benchmarks", "load_benchmarks"),
    "multi_agent": ("evalward.loaders.multi_agent_cases", "load_multi_agent"),
}


def _loader(fmt: EvalFormat) -> _FormatLoader:
    module, name = _LOADERS[fmt]
    loader: _FormatLoader = getattr(importlib.import_module(module), name)
    return loader


@dataclass
class LoadedEvalSets:
    """The eval sets read, in order, and non-fatal remarks about them."""

    sets: list[EvalSet] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    selection: str | None = None
    """The `FILE:IDS` paths that selected cases (e.g. `a.evalset.json:x,y`), None when every case was kept."""


@dataclass
class _FileResult:
    eval_set: EvalSet | None
    problems: list[FileProblem]
    warnings: list[str]
    format: EvalFormat | None = None


def load_paths(
    paths: Sequence[str | Path],
    *,
    known_metrics: Collection[str] = (),
    config_path: str | Path | None = None,
    initial_session_path: str | Path | None = None,
    stream: bool = True,
    custom_evaluator_types: Sequence[str] = (),
) -> LoadedEvalSets:
    """Read every eval file named or found under `paths`; raise EvalFileError listing every problem.

    `stream=False` reads every file whole instead of one case at a time (`load_file_result`);
    `custom_evaluator_types` are the paths of the evaluator classes pydantic-evals Dataset files name (module
    docstring), UsageError when one is not such a path."""
    if custom_evaluator_types:
        from evalward.loaders.pydantic_evals_dataset import (
            custom_evaluator_names,  # start-up: pydantic-evals' loader, only for its files
        )

        custom_evaluator_names(custom_evaluator_types)  # a malformed path is refused before any file is read
    discovered = discover(paths)
    problems: list[FileProblem] = list(discovered.problems)
    loaded = LoadedEvalSets(warnings=list(discovered.warnings))
    explicit_session: SessionInput | None = None
    if initial_session_path is not None:
        explicit_session = read_initial_session(
            Path(initial_session_path), str(initial_session_path), problems, loaded.warnings
        )
    selections: list[str] = []

    override: Criteria | None = None
    if config_path is not None:
        override, config_problems = read_test_config(config_path, known_metrics=known_metrics)
        problems.extend(config_problems.items)
        loaded.warnings.extend(config_problems.warnings)

    beside: dict[Path, Criteria | None] = {}
    sessions: dict[Path, SessionInput | None] = {}
    for file, shown in discovered.files:
        result = load_file_result(
            file, shown, known_metrics=known_metrics, stream=stream, custom_evaluator_types=custom_evaluator_types
        )
        problems.extend(result.problems)
        loaded.warnings.extend(result.warnings)
        session: SessionInput | None = None
        if initial_session_path is not None:
            session = explicit_session
        elif result.format in ADK_FORMATS and (file.parent / INITIAL_SESSION_FILE_NAME).is_file():
            session_shown = str(Path(shown).parent / INITIAL_SESSION_FILE_NAME)
            if result.format != "adk_legacy_test":
                loaded.warnings.append(
                    f"{session_shown}: not applied to {shown}: an initial session file applies to legacy "
                    "test files only (this file's cases carry their own session, as ADK requires)"
                )
            else:
                if file.parent not in sessions:
                    sessions[file.parent] = read_initial_session(
                        file.parent / INITIAL_SESSION_FILE_NAME, session_shown, problems, loaded.warnings
                    )
                session = sessions[file.parent]
        # The config beside an ADK file is read even when the file itself has problems, so both are reported.
        found: Criteria | None = None
        if override is None and result.format is not None:
            folder = file.parent
            if folder not in beside:
                beside[folder] = _config_beside(file, shown, known_metrics, problems, loaded.warnings)
            found = beside[folder]
        eval_set = result.eval_set
        if eval_set is None:
            continue
        ids = discovered.case_ids(file)
        if ids is not None:
            if not _select_ids(eval_set, ids, shown, problems):
                continue
            selections.append(f"{shown}:{','.join(ids)}")
        if session is not None:
            apply_initial_session(eval_set, session)
        if override is not None:
            eval_set.criteria = override.model_copy(deep=True)
        elif eval_set.format in ADK_FORMATS:
            eval_set.criteria = found.model_copy(deep=True) if found is not None else adk_default_criteria()
        elif found is not None:
            eval_set.criteria = add_beside(eval_set.criteria, found)
        loaded.sets.append(eval_set)

    if problems:
        raise EvalFileError(problems)
    _warn_shared_ids(loaded)
    loaded.selection = " ".join(selections) or None
    return loaded


def add_beside(own: Criteria, found: Criteria) -> Criteria:
    """A non-ADK file's criteria with those of the `test_config.json` beside it: added (same names replaced),
    or instead of them when the config says `"replace_defaults": true`."""
    if found.replace_defaults:
        return found.model_copy(deep=True)
    by_name = {m.name: m for m in found.metrics}
    merged = [by_name.pop(m.name, m) for m in own.metrics]
    merged.extend(by_name.values())
    return own.model_copy(
        update={
            "metrics": merged,
            "config_path": found.config_path,
            "user_simulator": found.user_simulator or own.user_simulator,
        }
    )


def _select_ids(eval_set: EvalSet, ids: Sequence[str], shown: str, problems: list[FileProblem]) -> bool:
    """Keep only the cases `ids` names (in file order); False after recording a problem for unknown ids."""
    known = eval_set.case_ids()
    present = set(known)
    unknown = [i for i in ids if i not in present]
    if unknown:
        problems.append(
            FileProblem(
                path=shown,
                message=f"no case {', '.join(repr(i) for i in unknown)} in this file (selected with {shown}:IDS)",
                expected=f"ids of its cases: {listed_ids(known)}",
                found=", ".join(repr(i) for i in unknown),
            )
        )
        return False
    eval_set.cases = keep_ids(eval_set.cases, set(ids).__contains__)
    return True


def apply_initial_session(eval_set: EvalSet, session: SessionInput) -> None:
    """Give every case of `eval_set` the initial `session` where it sets none of its own (module docstring).

    Cases read back on demand get it as they are read (`model.cases.edit_cases`)."""
    eval_set.cases = edit_cases(eval_set.cases, functools.partial(_give_session, session))


def _give_session(session: SessionInput, case: EvalCase) -> None:
    own = case.session_input
    if own is None:
        case.session_input = session.model_copy(deep=True)
        return
    merged = session.model_copy(deep=True)
    case.session_input = own.model_copy(
        update={
            "app_name": own.app_name or merged.app_name,
            "user_id": own.user_id or merged.user_id,
            "state": {**merged.state, **own.state},
        }
    )


def load_file(path: str | Path, *, known_metrics: Collection[str] = ()) -> EvalSet:
    """One file, criteria resolved as `load_paths` does; raise EvalFileError listing every problem."""
    return load_paths([path], known_metrics=known_metrics).sets[0]


def load_file_result(
    file: Path,
    shown: str,
    *,
    known_metrics: Collection[str] = (),
    stream: bool = True,
    custom_evaluator_types: Sequence[str] = (),
) -> _FileResult:
    """Parse, detect and map one file without resolving `test_config.json` criteria.

    The formats `loaders.streamed` reads are read one case at a time, their cases kept as an `IndexedCases`;
    `stream=False` reads every file whole (the reference the streamed path is tested against)."""
    default_id = eval_set_stem(file.name)
    try:
        source = read_source(file, shown)
        streamed = load_streamed(source, default_id) if stream else None
        fmt: EvalFormat | None
        if isinstance(streamed, Streamed):
            collected, fmt, eval_set = streamed.problems, streamed.format, streamed.eval_set
        else:
            document = streamed.document if streamed is not None else parse_source(source)
            collected, fmt, eval_set = _load_whole(document, default_id, known_metrics, custom_evaluator_types)
    except DocumentError as exc:
        return _FileResult(None, exc.problems, [])
    if eval_set is not None:
        eval_set.path = shown
        _check_id_characters(eval_set, collected)
        _check_case_ids(eval_set, collected)
        if collected.items:
            eval_set = None
    return _FileResult(eval_set, collected.items, collected.warnings, fmt)


def _load_whole(
    document: Document, default_id: str, known_metrics: Collection[str], custom_evaluator_types: Sequence[str] = ()
) -> tuple[Problems, EvalFormat | None, EvalSet | None]:
    """Detect and map a document read whole."""
    collected = Problems(document)
    fmt = detect_format(document.data)
    if fmt is None:
        collected.add("not a recognised eval file format", expected=KNOWN_SHAPES, found=describe_shape(document.data))
        return collected, None, None
    if fmt == "native":
        from evalward.loaders.native import load_native  # start-up: a format's loader loads with its first file

        return collected, fmt, load_native(collected, default_id, known_metrics)
    if fmt == "pydantic_evals":
        from evalward.loaders.pydantic_evals_dataset import (
            load_pydantic_evals,  # start-up: a format's loader loads with its first file
        )

        return collected, fmt, load_pydantic_evals(collected, default_id, custom_evaluator_types)
    return collected, fmt, _loader(fmt)(collected, default_id)


def _config_beside(
    file: Path, shown: str, known_metrics: Collection[str], problems: list[FileProblem], warnings: list[str]
) -> Criteria | None:
    config = file.parent / CONFIG_FILE_NAME
    if not config.is_file():
        return None
    criteria, found = read_test_config(Path(shown).parent / CONFIG_FILE_NAME, known_metrics=known_metrics)
    problems.extend(found.items)
    warnings.extend(found.warnings)
    return criteria


def read_initial_session(
    path: Path, shown: str, problems: list[FileProblem], warnings: list[str] | None = None
) -> SessionInput | None:
    """An initial session file (`evalward.reading`'s bounds), None for `{}` or after recording its problems."""
    if not os.path.lexists(path):
        problems.append(
            FileProblem(
                path=shown,
                message="no such initial session file",
                expected='a JSON object {"state": {...}, "app_name": "...", "user_id": "..."}',
            )
        )
        return None
    try:
        document = read_document(path, shown)
    except DocumentError as exc:
        problems.extend(exc.problems)
        return None
    from evalward.loaders.adk_legacy import parse_initial_session  # start-up: only with an initial_session_file

    collected = Problems(document)
    session = parse_initial_session(collected)
    problems.extend(collected.items)
    if warnings is not None:
        warnings.extend(collected.warnings)
    return session


def _control_character_found(identifier: str) -> str | None:
    """`'\\n' at character 5` for the first control character in `identifier`, else None."""
    found = CONTROL_CHARACTER.search(identifier)
    if found is None:
        return None
    return f"{found.group()!r} at character {found.start() + 1}"


def _check_id_characters(eval_set: EvalSet, collected: Problems) -> None:
    """Ids are keys in reports, logs and the database (PostgreSQL refuses NUL): no control characters."""
    found = _control_character_found(eval_set.eval_set_id)
    if found is not None:
        data = collected.document.data
        keys = ("name",) if eval_set.format == "pydantic_evals" else ("eval_set_id", "evalSetId")
        key = next((k for k in keys if isinstance(data, dict) and k in data), None)
        if key is not None:
            collected.add(
                "the eval set id contains a control character", (key,), expected="printable text", found=found
            )
        else:
            collected.add(
                "the eval set id, taken from the file name, contains a control character: rename the file or "
                "set eval_set_id",
                expected="printable text",
                found=found,
            )
    for index, case_id in enumerate(case_ids(eval_set.cases)):
        found = _control_character_found(case_id)
        if found is None:
            continue
        source = case_source(eval_set.cases, index)
        collected.items.append(
            FileProblem(
                path=collected.path,
                message="the case id contains a control character",
                line=source.line if source else None,
                column=source.column if source else None,
                json_path=source.json_path if source else None,
                expected="printable text",
                found=found,
            )
        )


def _check_case_ids(eval_set: EvalSet, collected: Problems) -> None:
    first_seen: dict[str, int] = {}  # id -> index of its first case
    for index, case_id in enumerate(case_ids(eval_set.cases)):
        if case_id not in first_seen:
            first_seen[case_id] = index
            continue
        first = case_source(eval_set.cases, first_seen[case_id])
        first_line = first.line if first else None
        source = case_source(eval_set.cases, index)
        collected.items.append(
            FileProblem(
                path=collected.path,
                message=f"duplicate case id {case_id!r}",
                line=source.line if source else None,
                column=source.column if source else None,
                json_path=source.json_path if source else None,
                case_id=case_id,
                expected="case ids unique within the file",
                found="the same id again" + (f" (first at line {first_line})" if first_line is not None else ""),
            )
        )


def _warn_shared_ids(loaded: LoadedEvalSets) -> None:
    by_id: dict[str, list[str]] = {}
    for eval_set in loaded.sets:
        by_id.setdefault(eval_set.eval_set_id, []).append(eval_set.path or "?")
    for set_id, files in by_id.items():
        if len(files) > 1:
            loaded.warnings.append(
                f"eval set id {set_id!r} is used by {len(files)} files ({', '.join(files)}); results are keyed "
                "by set and case id, so give each file its own eval_set_id"
            )
