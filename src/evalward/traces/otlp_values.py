"""OTLP JSON values as plain Python: `AnyValue`s, attribute lists and nanosecond times.

Spans (`otlp`) and log records (`otlp_logs`) carry their attributes, and a log record its body, as `AnyValue`
objects: `{"stringValue": "x"}`, `{"intValue": "3"}` (64-bit ints are strings in JSON), `doubleValue`,
`boolValue`, `arrayValue.values`, `kvlistValue.values`, `bytesValue`. Both readers decode them here, so a
message recorded as a span attribute and the same message recorded as a log record read the same.
"""

from __future__ import annotations

from typing import Any


def decode_any_value(value: Any) -> Any:
    """An OTLP `AnyValue` (JSON mapping) as a plain Python value; anything else is returned as is."""
    if not isinstance(value, dict):
        return value
    if not value:
        return None
    key, inner = next(iter(value.items()))
    if key in ("stringValue", "string_value"):
        return inner
    if key in ("boolValue", "bool_value"):
        return bool(inner)
    if key in ("intValue", "int_value"):
        try:
            return int(inner)
        except (TypeError, ValueError):
            return inner
    if key in ("doubleValue", "double_value"):
        try:
            return float(inner)
        except (TypeError, ValueError):
            return inner
    if key in ("arrayValue", "array_value"):
        return [decode_any_value(v) for v in (inner or {}).get("values", [])]
    if key in ("kvlistValue", "kvlist_value"):
        return decode_attributes((inner or {}).get("values", []))
    if key in ("bytesValue", "bytes_value"):
        return inner
    return value


def decode_attributes(items: Any) -> dict[str, Any]:
    """OTLP `[{key, value: AnyValue}]` → {key: decoded value}; a plain mapping is returned decoded."""
    if isinstance(items, dict):
        return {str(k): decode_any_value(v) for k, v in items.items()}
    decoded: dict[str, Any] = {}
    for item in items or []:
        if isinstance(item, dict) and "key" in item:
            decoded[str(item["key"])] = decode_any_value(item.get("value"))
    return decoded


def first_key(mapping: dict[str, Any], *names: str) -> Any:
    """The value under the first of `names` present in `mapping` (OTLP JSON allows camelCase and
    snake_case field names), else None."""
    for name in names:
        if name in mapping:
            return mapping[name]
    return None


def nanos(value: Any) -> int:
    """A time in nanoseconds (a JSON string or number); 0 when absent or not a number."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0
