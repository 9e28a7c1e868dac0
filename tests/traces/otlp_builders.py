"""Builders for OTLP JSON trace exports as instrumentations write them (AnyValue-encoded attributes)."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


def any_value(value: Any) -> dict[str, Any]:
    """A Python value (an attribute, a log body) as an OTLP JSON `AnyValue`: ints as strings and bytes as base64, as
    the protobuf JSON mapping writes them; None as the empty value."""
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, bytes):
        return {"bytesValue": base64.b64encode(value).decode("ascii")}
    if isinstance(value, Mapping):
        return {"kvlistValue": {"values": [{"key": k, "value": any_value(v)} for k, v in value.items()]}}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    return {"stringValue": str(value)}


@dataclass
class TraceBuilder:
    """Spans of one trace; times are given in milliseconds from the trace's start."""

    trace_id: str
    base_ns: int = 1_700_000_000_000_000_000
    spans: list[dict[str, Any]] = field(default_factory=list)

    def span(
        self,
        span_id: str,
        name: str,
        *,
        parent: str | None = None,
        start_ms: int = 0,
        end_ms: int | None = None,
        error: bool = False,
        events: list[dict[str, Any]] | None = None,
        **attributes: Any,
    ) -> TraceBuilder:
        """Add a span; attribute keyword names use `__` for `.` (`gen_ai__tool__name`)."""
        decoded = {key.replace("__", "."): value for key, value in attributes.items()}
        raw: dict[str, Any] = {
            "traceId": self.trace_id,
            "spanId": span_id,
            "parentSpanId": parent or "",
            "name": name,
            "kind": 1,
            "startTimeUnixNano": str(self.base_ns + start_ms * 1_000_000),
            "endTimeUnixNano": str(self.base_ns + (end_ms if end_ms is not None else start_ms + 1) * 1_000_000),
            "attributes": [{"key": k, "value": any_value(v)} for k, v in decoded.items()],
            "status": {"code": 2, "message": "boom"} if error else {},
        }
        if events:
            raw["events"] = [
                {
                    "name": e["name"],
                    "timeUnixNano": str(self.base_ns),
                    "attributes": [{"key": k, "value": any_value(v)} for k, v in e.get("attributes", {}).items()],
                }
                for e in events
            ]
        self.spans.append(raw)
        return self


def export(*traces: TraceBuilder, service: str = "shop") -> dict[str, Any]:
    """One OTLP JSON export holding every span of `traces`."""
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
                "scopeSpans": [
                    {"scope": {"name": "test"}, "spans": [span for trace in traces for span in trace.spans]}
                ],
            }
        ]
    }


def messages(*items: dict[str, Any]) -> str:
    """`gen_ai.*.messages` as instrumentations write it: a JSON string."""
    return json.dumps(list(items))


def text_message(role: str, text: str, finish_reason: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "parts": [{"type": "text", "content": text}]}
    if finish_reason is not None:
        message["finish_reason"] = finish_reason
    return message


def multi_agent_turn(
    trace_id: str, *, conversation: str = "conv-1", case_id: str | None = None, offset_s: int = 0
) -> TraceBuilder:
    """A coordinator that asks a model, transfers to `billing`, which refunds an invoice (1.37+ attributes).

    Span tree (times in ms):
        invoke_agent coordinator        0..100   (output: "Refunded invoice 42.")
          chat gpt-4o                   1..10    (requests c1 transfer_to_agent; 12 in / 5 out tokens)
          execute_tool transfer_to_agent 11..12
          invoke_agent billing          13..90   (output: "Refund done.")
            chat gpt-4o                 14..20   (requests c2 refund; 20 in / 7 out)
            execute_tool refund         21..30   (args {"invoice": 42}, result {"ok": true})
            chat gpt-4o                 31..40   (finish stop, "Refund done."; 30 in / 4 out)
    """
    extra = {"evalward__case_id": case_id} if case_id is not None else {}
    builder = TraceBuilder(trace_id, base_ns=TraceBuilder.base_ns + offset_s * 1_000_000_000)
    builder.span(
        "a1",
        "invoke_agent coordinator",
        start_ms=0,
        end_ms=100,
        gen_ai__operation__name="invoke_agent",
        gen_ai__agent__name="coordinator",
        gen_ai__conversation__id=conversation,
        gen_ai__input__messages=messages(text_message("user", "Refund invoice 42")),
        gen_ai__output__messages=messages(text_message("assistant", "Refunded invoice 42.", "stop")),
        **extra,
    )
    builder.span(
        "c1",
        "chat gpt-4o",
        parent="a1",
        start_ms=1,
        end_ms=10,
        gen_ai__operation__name="chat",
        gen_ai__usage__input_tokens=12,
        gen_ai__usage__output_tokens=5,
        gen_ai__output__messages=messages(
            {
                "role": "assistant",
                "parts": [
                    {
                        "type": "tool_call",
                        "id": "call-1",
                        "name": "transfer_to_agent",
                        "arguments": {"agent_name": "billing"},
                    }
                ],
                "finish_reason": "tool_call",
            }
        ),
    )
    builder.span(
        "t1",
        "execute_tool transfer_to_agent",
        parent="a1",
        start_ms=11,
        end_ms=12,
        gen_ai__operation__name="execute_tool",
        gen_ai__tool__name="transfer_to_agent",
        gen_ai__tool__call__id="call-1",
        gen_ai__tool__call__arguments=json.dumps({"agent_name": "billing"}),
    )
    builder.span(
        "a2",
        "invoke_agent billing",
        parent="a1",
        start_ms=13,
        end_ms=90,
        gen_ai__operation__name="invoke_agent",
        gen_ai__agent__name="billing",
        gen_ai__output__messages=messages(text_message("assistant", "Refund done.")),
    )
    builder.span(
        "c2",
        "chat gpt-4o",
        parent="a2",
        start_ms=14,
        end_ms=20,
        gen_ai__operation__name="chat",
        gen_ai__usage__input_tokens=20,
        gen_ai__usage__output_tokens=7,
        gen_ai__output__messages=messages(
            {
                "role": "assistant",
                "parts": [{"type": "tool_call", "id": "call-2", "name": "refund", "arguments": {"invoice": 42}}],
            }
        ),
    )
    builder.span(
        "t2",
        "execute_tool refund",
        parent="a2",
        start_ms=21,
        end_ms=30,
        gen_ai__operation__name="execute_tool",
        gen_ai__tool__name="refund",
        gen_ai__tool__call__id="call-2",
        gen_ai__tool__call__arguments=json.dumps({"invoice": 42}),
        gen_ai__tool__call__result=json.dumps({"ok": True}),
    )
    builder.span(
        "c3",
        "chat gpt-4o",
        parent="a2",
        start_ms=31,
        end_ms=40,
        gen_ai__operation__name="chat",
        gen_ai__usage__input_tokens=30,
        gen_ai__usage__output_tokens=4,
        gen_ai__output__messages=messages(text_message("assistant", "Refund done.", "stop")),
    )
    return builder
