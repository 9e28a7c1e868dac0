"""Native argument matching: JSON-typed comparison, args modes, key paths and per-value matchers.

Normalisation (docs/metrics.md §4), applied to both sides before comparing:
- strings holding a JSON object or array (`'{"a": 1}'`, `'[1, 2]'`) are parsed; other strings stay strings,
  so `"1"` is never turned into `1`;
- key order is irrelevant; `1 == 1.0`; `true != 1` (booleans are not numbers); `"1" != 1` unless `coerce`;
- a missing key is not `null`.

Modes (direction is always *actual relative to expected*):
- `exact`: deep equality;
- `ignore`: always true (names only);
- `contains`: actual ⊇ expected recursively (every expected key present in actual with a matching value);
- `within`: actual ⊆ expected (every actual key present in expected with a matching value).
Lists follow `list_policy`: `exact` (same length, in order), `unordered` (same multiset, maximum
matching) or `contains` (every expected element paired with a distinct actual element).

Per-value matchers may appear anywhere inside the expected value; a matcher is a JSON object holding one
known operator key (and only that operator's modifiers):
`{"$any": true}`, `{"$regex": "..."}` (re.search), `{"$contains": "..."}` (substring; element of a list),
`{"$icase": "..."}`, `{"$approx": x, "rel": r, "abs": a}` (|a − x| ≤ max(rel·|x|, abs); defaults rel=1e-6,
abs=1e-12 when neither is given, else the missing one is 0), `{"$in": [...]}`, `{"$type": "string"}` (or a
list of JSON type names), `{"$schema": {...}}` (needs the jsonschema extra, `pip install 'evalward[jsonschema]'`),
`{"$unordered": [...]}` (list equal as a multiset).
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evalward.metrics.matching import compat_matrix, maximum_matching
from evalward.metrics.patterns import PatternError, bounded_search, compile_pattern
from evalward.model.text import compact_json

ArgsMode = Literal["exact", "ignore", "contains", "within"]
ListPolicy = Literal["exact", "unordered", "contains"]

JSON_TYPES = ("string", "number", "integer", "boolean", "object", "array", "null")

_MATCHER_MODIFIERS: dict[str, frozenset[str]] = {
    "$any": frozenset(),
    "$regex": frozenset(),
    "$contains": frozenset(),
    "$icase": frozenset(),
    "$approx": frozenset({"rel", "abs"}),
    "$in": frozenset(),
    "$type": frozenset(),
    "$schema": frozenset(),
    "$unordered": frozenset(),
}


class MatcherError(ValueError):
    """A value matcher in an expectation is malformed (wrong operand type, unknown modifier, …)."""


class _Missing:
    """Marks an absent key, which is distinct from JSON null."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()


@dataclass(frozen=True)
class ArgDiff:
    """One difference between actual and expected at a JSON path."""

    path: str
    reason: str
    expected: Any = MISSING
    actual: Any = MISSING

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly form for `details`; absent sides are omitted."""
        out: dict[str, Any] = {"path": self.path, "reason": self.reason}
        if self.expected is not MISSING:
            out["expected"] = self.expected
        if self.actual is not MISSING:
            out["actual"] = self.actual
        return out

    def render(self) -> str:
        """`$.q: expected "a", found "b"`."""
        exp = "<missing>" if self.expected is MISSING else compact_json(self.expected)
        act = "<missing>" if self.actual is MISSING else compact_json(self.actual)
        return f"{self.path}: {self.reason} (expected {exp}, found {act})"


@dataclass(frozen=True)
class ArgsRule:
    """How one call's arguments are compared."""

    mode: ArgsMode = "exact"
    keys: tuple[str, ...] | None = None
    """Compare only these dot paths (`a.b.0`); both sides missing = equal, one side missing = different."""
    coerce: bool = False
    """Compare a string with a number/boolean by its JSON reading (`"1" == 1`, `"true" == true`)."""
    list_policy: ListPolicy = "exact"


# --- normalisation -----------------------------------------------------------------------------------


def normalize_json(value: Any) -> Any:
    """Parse strings holding a JSON object/array (recursively); tuples become lists."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "["):
            try:
                parsed = json.loads(stripped)
            except ValueError:
                return value
            if isinstance(parsed, dict | list):
                return normalize_json(parsed)
        return value
    if isinstance(value, Mapping):
        return {str(k): normalize_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normalize_json(v) for v in value]
    return value


def json_type(value: Any) -> str:
    """The JSON type name of a Python value (`integer` for whole numbers, booleans are `boolean`)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def scalar_equal(actual: Any, expected: Any, *, coerce: bool = False) -> bool:
    """JSON-typed equality of scalars: numbers by value, booleans only with booleans, strings with strings."""
    if isinstance(actual, bool) or isinstance(expected, bool):
        if isinstance(actual, bool) and isinstance(expected, bool):
            return actual is expected
        if coerce:
            return _coerced_text(actual) == _coerced_text(expected)
        return False
    if _is_number(actual) and _is_number(expected):
        return bool(actual == expected)
    if coerce and (
        (_is_number(actual) and isinstance(expected, str)) or (_is_number(expected) and isinstance(actual, str))
    ):
        number, text = (actual, expected) if _is_number(actual) else (expected, actual)
        try:
            return float(text.strip()) == float(number)
        except ValueError:
            return False
    if type(actual) is not type(expected) and not (isinstance(actual, str) and isinstance(expected, str)):
        return False
    return bool(actual == expected)


def _coerced_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).strip().lower()


# --- matchers ----------------------------------------------------------------------------------------


def matcher_operator(value: Any) -> str | None:
    """The operator if `value` is a matcher object (one known `$` key plus its modifiers), else None."""
    if not isinstance(value, Mapping):
        return None
    operators: list[str] = [str(k) for k in value if k in _MATCHER_MODIFIERS]
    if len(operators) != 1:
        return None
    op = operators[0]
    extra = set(value) - {op}
    if extra - _MATCHER_MODIFIERS[op]:
        return None
    return op


def check_matchers(expected: Any, path: str = "$") -> list[str]:
    """Problems with the matchers inside an expected value (for validating options up front)."""
    problems: list[str] = []
    op = matcher_operator(expected)
    if op is not None:
        try:
            _validate_matcher(op, expected, path)
        except MatcherError as exc:
            problems.append(str(exc))
        return problems
    if isinstance(expected, Mapping):
        for key, value in expected.items():
            problems.extend(check_matchers(value, f"{path}.{key}"))
    elif isinstance(expected, list):
        for index, value in enumerate(expected):
            problems.extend(check_matchers(value, f"{path}[{index}]"))
    return problems


def _validate_matcher(op: str, spec: Mapping[str, Any], path: str) -> None:
    operand = spec[op]
    wrong = f"{path}: matcher {op} needs"
    if op == "$any" and operand is not True:
        raise MatcherError(f"{wrong} true, found {compact_json(operand)}")
    if op in ("$regex", "$contains", "$icase") and not isinstance(operand, str):
        raise MatcherError(f"{wrong} a string, found {compact_json(operand)}")
    if op == "$regex":
        try:
            compile_pattern(operand)
        except PatternError as exc:
            raise MatcherError(f"{path}: invalid $regex {operand!r}: {exc}") from exc
    if op == "$approx":
        if not _is_number(operand):
            raise MatcherError(f"{wrong} a number, found {compact_json(operand)}")
        for key in ("rel", "abs"):
            if key in spec and (not _is_number(spec[key]) or spec[key] < 0):
                raise MatcherError(f"{path}: $approx {key} must be a non-negative number, found {spec[key]!r}")
    if op in ("$in", "$unordered") and not isinstance(operand, list):
        raise MatcherError(f"{wrong} a list, found {compact_json(operand)}")
    if op == "$type":
        names = operand if isinstance(operand, list) else [operand]
        bad = [n for n in names if n not in JSON_TYPES]
        if bad or not names:
            raise MatcherError(
                f"{wrong} one of {', '.join(JSON_TYPES)} (or a list of them), found {compact_json(operand)}"
            )
    if op == "$schema":
        if not isinstance(operand, Mapping | bool):
            raise MatcherError(f"{wrong} a JSON Schema object, found {compact_json(operand)}")
        _jsonschema(path)  # up front, so `validate` and a run's option check say what to install


def _jsonschema(path: str) -> Any:
    """The `jsonschema` module, an optional extra imported only when an expectation uses `$schema`."""
    try:
        # Imported by name: optional dependency without type stubs.
        return importlib.import_module("jsonschema")
    except ImportError as exc:
        raise MatcherError(f"{path}: $schema needs the jsonschema extra: pip install 'evalward[jsonschema]'") from exc


def _apply_matcher(op: str, spec: Mapping[str, Any], actual: Any, rule: ArgsRule, path: str) -> list[ArgDiff]:
    _validate_matcher(op, spec, path)
    operand = spec[op]
    expected_view = dict(spec)

    def fail(reason: str) -> list[ArgDiff]:
        return [ArgDiff(path, reason, expected_view, actual)]

    if actual is MISSING:
        return fail("missing key")
    if op == "$any":
        return []
    if op == "$regex":
        if not isinstance(actual, str):
            return fail("$regex needs a string")
        return [] if bounded_search(operand, actual) else fail("no $regex match")
    if op == "$contains":
        if isinstance(actual, str):
            return [] if operand in actual else fail("substring not found")
        if isinstance(actual, list):
            found = any(scalar_equal(item, operand, coerce=rule.coerce) for item in actual)
            return [] if found else fail("element not found")
        return fail("$contains needs a string or a list")
    if op == "$icase":
        if not isinstance(actual, str):
            return fail("$icase needs a string")
        return [] if actual.casefold() == operand.casefold() else fail("not equal ignoring case")
    if op == "$approx":
        if not _is_number(actual):
            return fail("$approx needs a number")
        given_rel, given_abs = spec.get("rel"), spec.get("abs")
        if given_rel is None and given_abs is None:
            rel, tol_abs = 1e-6, 1e-12
        else:
            rel, tol_abs = float(given_rel or 0.0), float(given_abs or 0.0)
        tolerance = max(rel * abs(operand), tol_abs)
        return (
            []
            if abs(actual - operand) <= tolerance
            else fail(f"|diff|={abs(actual - operand):g} > tolerance {tolerance:g}")
        )
    if op == "$in":
        for option in operand:
            if not diff_values(actual, option, rule, path):
                return []
        return fail("not one of $in")
    if op == "$type":
        names = operand if isinstance(operand, list) else [operand]
        kind = json_type(actual)
        ok = kind in names or (kind == "integer" and "number" in names)
        return [] if ok else fail(f"type {kind} is not {'/'.join(names)}")
    if op == "$schema":
        return _schema_diffs(operand, actual, path, expected_view)
    # $unordered
    if not isinstance(actual, list):
        return fail("$unordered needs a list")
    return _list_diffs(actual, operand, rule, path, policy="unordered")


def _schema_diffs(schema: Any, actual: Any, path: str, expected_view: Any) -> list[ArgDiff]:
    jsonschema = _jsonschema(path)
    validator_cls = jsonschema.validators.validator_for(schema)
    try:
        validator_cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise MatcherError(f"{path}: invalid $schema: {exc.message}") from exc
    errors = sorted(validator_cls(schema).iter_errors(actual), key=lambda e: list(e.absolute_path))
    return [
        ArgDiff(
            path + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path),
            f"schema: {e.message}",
            expected_view,
            actual,
        )
        for e in errors
    ]


# --- comparison --------------------------------------------------------------------------------------


def diff_values(actual: Any, expected: Any, rule: ArgsRule, path: str = "$") -> list[ArgDiff]:
    """Differences between `actual` and `expected` under `rule` (empty = they match).

    `ignore` mode matches everything. Matchers in `expected` are applied wherever they appear.
    """
    if rule.mode == "ignore":
        return []
    op = matcher_operator(expected)
    if op is not None:
        return _apply_matcher(op, expected, actual, rule, path)
    if actual is MISSING:
        return [ArgDiff(path, "missing key", expected, MISSING)]
    if expected is MISSING:
        return [ArgDiff(path, "unexpected key", MISSING, actual)]
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return _dict_diffs(actual, expected, rule, path)
    if isinstance(expected, list) and isinstance(actual, list):
        return _list_diffs(actual, expected, rule, path, policy=rule.list_policy)
    if isinstance(expected, Mapping | list) or isinstance(actual, Mapping | list):
        return [ArgDiff(path, f"type {json_type(actual)} is not {json_type(expected)}", expected, actual)]
    if scalar_equal(actual, expected, coerce=rule.coerce):
        return []
    reason = "not equal"
    if json_type(actual) != json_type(expected) and {json_type(actual), json_type(expected)} != {"integer", "number"}:
        reason = f"type {json_type(actual)} is not {json_type(expected)}"
    return [ArgDiff(path, reason, expected, actual)]


def _dict_diffs(actual: Mapping[str, Any], expected: Mapping[str, Any], rule: ArgsRule, path: str) -> list[ArgDiff]:
    diffs: list[ArgDiff] = []
    if rule.mode in ("exact", "contains"):
        for key, value in expected.items():
            diffs.extend(diff_values(actual.get(key, MISSING), value, rule, f"{path}.{key}"))
    if rule.mode == "exact":
        for key, value in actual.items():
            if key not in expected:
                diffs.append(ArgDiff(f"{path}.{key}", "unexpected key", MISSING, value))
    if rule.mode == "within":
        for key, value in actual.items():
            if key not in expected:
                diffs.append(ArgDiff(f"{path}.{key}", "key not allowed (within)", MISSING, value))
            else:
                diffs.extend(diff_values(value, expected[key], rule, f"{path}.{key}"))
    return diffs


def _list_diffs(
    actual: list[Any], expected: list[Any], rule: ArgsRule, path: str, *, policy: ListPolicy
) -> list[ArgDiff]:
    if policy == "exact":
        diffs: list[ArgDiff] = []
        for index in range(max(len(actual), len(expected))):
            a = actual[index] if index < len(actual) else MISSING
            e = expected[index] if index < len(expected) else MISSING
            if a is MISSING:
                diffs.append(ArgDiff(f"{path}[{index}]", "missing element", e, MISSING))
            elif e is MISSING:
                diffs.append(ArgDiff(f"{path}[{index}]", "unexpected element", MISSING, a))
            else:
                diffs.extend(diff_values(a, e, rule, f"{path}[{index}]"))
        return diffs
    compat = compat_matrix(actual, expected, lambda a, e: not diff_values(a, e, rule, path))
    pairs = maximum_matching(compat, len(expected))
    matched_actual = {i for i, _ in pairs}
    matched_expected = {j for _, j in pairs}
    out = [
        ArgDiff(f"{path}[{j}]", "no matching element", e, MISSING)
        for j, e in enumerate(expected)
        if j not in matched_expected
    ]
    if policy == "unordered":
        out.extend(
            ArgDiff(f"{path}[{i}]", "unexpected element", MISSING, a)
            for i, a in enumerate(actual)
            if i not in matched_actual
        )
    return out


def split_path(path: str) -> list[str]:
    """`a.b.0` / `$.a.b[0]` → ['a', 'b', '0']."""
    text = path.strip()
    if text.startswith("$"):
        text = text[1:]
    text = re.sub(r"\[(\d+|\*)\]", r".\1", text)
    return [part for part in text.split(".") if part != ""]


def get_path(value: Any, parts: Sequence[str]) -> Any:
    """The value at a split dot path, or MISSING (numeric parts index lists)."""
    current = value
    for part in parts:
        if isinstance(current, Mapping):
            if part not in current:
                return MISSING
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return MISSING
    return current


def compare_args(actual: Mapping[str, Any] | None, expected: Mapping[str, Any] | None, rule: ArgsRule) -> list[ArgDiff]:
    """Differences between a call's actual and expected arguments (normalised first).

    Absent args (`None`) on either side mean "not recorded / not specified": the call is matched by name
    only (docs/metrics.md §11), and the trajectory metrics say so in their details ("matched by name only").
    """
    if rule.mode == "ignore" or expected is None or actual is None:
        return []
    act = normalize_json(dict(actual))
    exp = normalize_json(dict(expected))
    if rule.keys is None:
        return diff_values(act, exp, rule)
    diffs: list[ArgDiff] = []
    for key in rule.keys:
        parts = split_path(key)
        a, e = get_path(act, parts), get_path(exp, parts)
        if a is MISSING and e is MISSING:
            continue
        diffs.extend(diff_values(a, e, rule, "$." + ".".join(parts)))
    return diffs


def args_match(actual: Mapping[str, Any] | None, expected: Mapping[str, Any] | None, rule: ArgsRule) -> bool:
    """True when `compare_args` finds no difference."""
    return not compare_args(actual, expected, rule)


# --- partial credit ----------------------------------------------------------------------------------

CreditMode = Literal["symmetric", "recall"]


@dataclass(frozen=True)
class Credit:
    """Partial credit of one call's arguments: `matched / total` leaves (value 1.0 when M holds)."""

    value: float
    matched: int
    total: int
    full_match: bool

    def render(self) -> str:
        """`1.000 (args match)` or `2/3=0.667`."""
        return "1.000 (args match)" if self.full_match else ratio_text(self.matched, self.total)


def ratio_text(numerator: int, denominator: int) -> str:
    value = numerator / denominator if denominator else 1.0
    return f"{numerator}/{denominator}={value:.3f}"


def leaves(value: Any) -> dict[tuple[str, ...], Any]:
    """The leaf paths of a JSON object: every value that is not a non-empty object (a matcher object, a
    list, a scalar or `{}` is one leaf). The top-level object itself is never a leaf."""
    out: dict[tuple[str, ...], Any] = {}

    def walk(node: Any, path: tuple[str, ...]) -> None:
        if isinstance(node, Mapping) and node and matcher_operator(node) is None:
            for key, child in node.items():
                walk(child, (*path, str(key)))
        else:
            out[path] = node

    if isinstance(value, Mapping):
        for key, child in value.items():
            walk(child, (str(key),))
    return out


def args_credit(
    actual: Mapping[str, Any] | None,
    expected: Mapping[str, Any] | None,
    rule: ArgsRule,
    mode: CreditMode = "symmetric",
) -> Credit:
    """Partial credit for a call's arguments (docs/metrics.md §4), after normalisation:

        symmetric: credit = #{p ∈ leaves(e) : a[p] matches e[p]} ÷ #(leaves(e) ∪ leaves(a))
        recall:    credit = #{p ∈ leaves(e) : a[p] matches e[p]} ÷ #leaves(e)

    "matches" is `diff_values` under `rule` at that leaf (matchers apply; a missing key never matches). With
    `keys`, the leaves are the listed paths present on that side. Arguments that satisfy the rule outright
    (`compare_args` finds no difference, e.g. `contains` with extra actual keys) score 1, so a weighted metric
    is never below its 0/1 counterpart; so do `ignore` mode and unrecorded args (name-only matching). An
    empty denominator (nothing expected under `recall`) scores 1.
    """
    if not compare_args(actual, expected, rule):
        return Credit(1.0, 0, 0, True)
    assert actual is not None and expected is not None  # compare_args matches when either is absent
    act = normalize_json(dict(actual))
    exp = normalize_json(dict(expected))
    if rule.keys is not None:
        paths = [tuple(split_path(key)) for key in rule.keys]
        expected_paths = [p for p in paths if get_path(exp, p) is not MISSING]
        actual_paths = [p for p in paths if get_path(act, p) is not MISSING]
        expected_leaves = {p: get_path(exp, p) for p in expected_paths}
        union = len(set(expected_paths) | set(actual_paths))
    else:
        expected_leaves = leaves(exp)
        union = len(set(expected_leaves) | set(leaves(act)))
    leaf_rule = ArgsRule(
        mode="exact" if rule.mode == "within" else rule.mode, coerce=rule.coerce, list_policy=rule.list_policy
    )
    matched = sum(
        1
        for path, value in expected_leaves.items()
        if not diff_values(get_path(act, path), value, leaf_rule, "$." + ".".join(path))
    )
    total = union if mode == "symmetric" else len(expected_leaves)
    return Credit(matched / total if total else 1.0, matched, total, False)
