"""Traces produced by the real OpenAI instrumentations, around a small tool-calling agent, exported as OTLP JSON.

The agent is what an application would write: it sends the user's query to an OpenAI-compatible model
(`tests/fakes/openai_server.py`, through the real `openai` client) with its tools declared, runs the tool
calls the model asks for, sends their results back, and returns the model's answer: one tool round trip
per case, two model calls. Each case runs under a span carrying `evalward.case_id`, as the docs tell users
to tag theirs. The instrumentation under test records whatever it records; the SDK's in-memory exporters
collect it, and `otlp_json` writes it as a Collector's file exporter would.

Instrumentations (`INSTRUMENTATIONS`), each instrumented with providers of its own and uninstrumented after,
with any process-wide switch it reads restored (tests share one process):
- `openinference`: `openinference-instrumentation-openai` (spans: `llm.input_messages.*`, `input.value`), and
  `openinference_values_only` (its messages hidden: only the request and response JSON in `input.value` /
  `output.value`);
- `openllmetry`: `opentelemetry-instrumentation-openai` (spans: `gen_ai.input.messages`), and
  `openllmetry_events` (`use_attributes=False`: log records);
- `openai_v2_span_only`: `opentelemetry-instrumentation-openai-v2` with the latest conventions and
  `span_only` content (spans: `gen_ai.input.messages`);
- `openai_v2_log_events`: openai-v2 in its default conventions with content on (log records, one a message);
- `openai_v2_event_only`: openai-v2, latest conventions, `event_only` (one log record a call);
- `openai_v2_no_content`, `openai_v2_latest_no_content`: openai-v2 with content capture left off.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai
import pytest
import wrapt
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer
from tests.fakes.openai_server import FakeOpenAI, Reply, ToolCallReply
from tests.traces.otlp_json import logs_export, spans_export

from evalward.model import ToolCall

MODEL = "agent-model"
SYSTEM = "You are the support agent of a small shop. Use the tools; answer in one sentence."


@dataclass(frozen=True)
class ToolStep:
    """A call the model asks for, and what the tool returns (sent back as the tool message's content:
    the text itself, or the JSON of anything else)."""

    name: str
    args: dict[str, Any]
    result: Any


@dataclass(frozen=True)
class AgentCase:
    case_id: str
    query: str
    steps: tuple[ToolStep, ...]
    answer: str

    def call_id(self, position: int) -> str:
        return f"call_{self.case_id}_{position}"

    def expected_calls(self) -> list[ToolCall]:
        """The calls a reader must give back: all asked for in the first model step (step 0)."""
        return [
            ToolCall(name=step.name, args=step.args, id=self.call_id(position), result=step.result, step=0)
            for position, step in enumerate(self.steps)
        ]


CASES = (
    AgentCase(
        "order_status",
        "Where is order 7?",
        (ToolStep("lookup_order", {"order_id": 7}, {"order_id": 7, "status": "shipped", "eta": "2024-05-02"}),),
        "Order 7 has shipped and arrives on 2 May.",
    ),
    AgentCase(
        "refund",
        "Please refund invoice 42: the kettle arrived broken.",
        (ToolStep("refund", {"invoice": 42, "reason": "damaged"}, {"refunded": True, "amount": 39.9}),),
        "Invoice 42 is refunded: 39.90 EUR.",
    ),
    AgentCase(
        "weather_two_cities",
        "What's the weather in Paris and in Oslo?",
        (
            ToolStep("weather", {"city": "Paris"}, "18°C, sunny"),
            ToolStep("weather", {"city": "Oslo"}, "4°C, snow"),
        ),
        "Paris: 18°C and sunny. Oslo: 4°C with snow.",
    ),
    AgentCase(
        "convert",
        "Convert 100 USD to EUR",
        (ToolStep("convert", {"amount": 100, "pair": {"from": "USD", "to": "EUR"}}, {"amount": 92.5}),),
        "100 USD is 92.50 EUR.",
    ),
    AgentCase(
        "search_quoted",
        'Find the "résumé" guide\nand nothing older than 2023',
        (ToolStep("search_docs", {"query": "résumé guide", "tags": ["hr", "howto"], "since": 2023}, ["a.md", "b.md"]),),
        "Found 2 guides: a.md and b.md.",
    ),
)

TOOLS = [
    {
        "type": "function",
        "function": {"name": name, "description": f"The shop's {name} tool.", "parameters": {"type": "object"}},
    }
    for name in sorted({step.name for case in CASES for step in case.steps})
]


def tool_content(result: Any) -> str:
    return result if isinstance(result, str) else json.dumps(result)


def respond(body: dict[str, Any]) -> Reply:
    """The model: the case's tool calls for its query, then its answer once the tool results are in."""
    messages = body["messages"]
    query = next(m["content"] for m in messages if m["role"] == "user")
    case = next(c for c in CASES if c.query == query)
    if messages[-1]["role"] == "tool":
        return Reply.text(case.answer, prompt_tokens=40, completion_tokens=12)
    calls = [ToolCallReply(step.name, step.args, id=case.call_id(i)) for i, step in enumerate(case.steps)]
    return Reply.calls(*calls, prompt_tokens=30, completion_tokens=8)


def run_agent(client: openai.OpenAI, case: AgentCase) -> str:
    """One turn of the agent: model, tools, model."""
    messages: list[Any] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": case.query}]
    first = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)  # type: ignore[arg-type]
    asked = first.choices[0].message
    messages.append(asked.model_dump(exclude_none=True))
    for call in asked.tool_calls or []:
        assert call.type == "function"
        args = json.loads(call.function.arguments)
        step = next(s for s in case.steps if s.name == call.function.name and s.args == args)
        messages.append({"role": "tool", "tool_call_id": call.id, "content": tool_content(step.result)})
    second = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)  # type: ignore[arg-type]
    answer = second.choices[0].message.content
    assert answer == case.answer
    return answer


@dataclass
class Telemetry:
    """What the SDK collected while the cases ran, and the trace each case ran in (its id as the SDK has it)."""

    spans: tuple[ReadableSpan, ...] = ()
    logs: tuple[ReadableLogRecord, ...] = ()
    traces: dict[str, int] = field(default_factory=dict)

    def drop_spans(self, case_id: str) -> None:
        """Lose the spans of one case, as when they went to another exporter or a batch was dropped."""
        self.spans = tuple(s for s in self.spans if s.context is None or s.context.trace_id != self.traces[case_id])

    def lines(self, *, with_logs: bool = True) -> list[str]:
        """OTLP JSON lines as a Collector's file exporter serving the traces and logs pipelines writes them:
        an export per case and signal, in the order its batches arrive — logs first for every other case (the
        two pipelines batch apart), and the spans of the weather case split over two exports."""
        lines: list[str] = []
        for position, (case_id, trace_id) in enumerate(self.traces.items()):
            spans = [s for s in self.spans if s.context is not None and s.context.trace_id == trace_id]
            logs = [r for r in self.logs if r.log_record.trace_id == trace_id]
            if case_id == "weather_two_cities":
                span_lines = [spans_export(spans[:1]), spans_export(spans[1:])]
            else:
                span_lines = [spans_export(spans)] if spans else []
            log_lines = [logs_export(logs)] if with_logs and logs else []
            ordered = [*log_lines, *span_lines] if position % 2 else [*span_lines, *log_lines]
            lines.extend(json.dumps(export, ensure_ascii=False) for export in ordered)
        return lines

    def write(self, path: Path, *, with_logs: bool = True) -> Path:
        path.write_text("\n".join(self.lines(with_logs=with_logs)) + "\n", encoding="utf-8")
        return path


@dataclass(frozen=True)
class Providers:
    """The SDK providers of one test: never the global ones, which a test cannot take back."""

    tracer: TracerProvider
    logger: LoggerProvider
    meter: MeterProvider

    def kwargs(self) -> dict[str, Any]:
        return {"tracer_provider": self.tracer, "logger_provider": self.logger, "meter_provider": self.meter}


Instrument = Callable[[Providers, pytest.MonkeyPatch], Any]
"""Instrument the `openai` client with these providers; return what `uninstrument()`s it."""


def _openinference(*, hide_messages: bool) -> Instrument:
    def instrument(providers: Providers, monkeypatch: pytest.MonkeyPatch) -> Any:
        from openinference.instrumentation.openai import OpenAIInstrumentor

        # Hiding the messages leaves the request and response JSON in `input.value` / `output.value`.
        for variable in ("OPENINFERENCE_HIDE_INPUT_MESSAGES", "OPENINFERENCE_HIDE_OUTPUT_MESSAGES"):
            monkeypatch.setenv(variable, "true" if hide_messages else "false")
        instrumentor = OpenAIInstrumentor()
        instrumentor.instrument(tracer_provider=providers.tracer, raise_exception_on_conflict=True)
        return instrumentor

    return instrument


def _openllmetry(use_attributes: bool) -> Instrument:
    def instrument(providers: Providers, monkeypatch: pytest.MonkeyPatch) -> Any:
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.instrumentation.openai.shared.config import Config

        # OpenLLMetry keeps its settings on a class, set by the instrumentor's constructor: put them back after.
        for name, value in list(vars(Config).items()):
            if not name.startswith("_"):
                monkeypatch.setattr(Config, name, value)
        monkeypatch.setenv("TRACELOOP_TRACE_CONTENT", "true")
        instrumentor = OpenAIInstrumentor(use_attributes=use_attributes)
        instrumentor.instrument(**providers.kwargs(), raise_exception_on_conflict=True)
        return instrumentor

    return instrument


def _openai_v2(*, latest: bool, content: str | None) -> Instrument:
    def instrument(providers: Providers, monkeypatch: pytest.MonkeyPatch) -> Any:
        from opentelemetry.instrumentation._semconv import _OpenTelemetrySemanticConventionStability
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        # Which conventions openai-v2 follows is read from OTEL_SEMCONV_STABILITY_OPT_IN once per process and
        # cached on this class; a fresh cache (restored after the test) lets each test choose its own.
        monkeypatch.setattr(_OpenTelemetrySemanticConventionStability, "_initialized", False)
        monkeypatch.setattr(_OpenTelemetrySemanticConventionStability, "_OTEL_SEMCONV_STABILITY_SIGNAL_MAPPING", {})
        if latest:
            monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
        else:
            monkeypatch.delenv("OTEL_SEMCONV_STABILITY_OPT_IN", raising=False)
        if content is None:
            monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
        else:
            monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", content)
        monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_EMIT_EVENT", raising=False)
        instrumentor = OpenAIInstrumentor()
        instrumentor.instrument(**providers.kwargs(), raise_exception_on_conflict=True)
        return instrumentor

    return instrument


INSTRUMENTATIONS: dict[str, Instrument] = {
    "openinference": _openinference(hide_messages=False),
    "openinference_values_only": _openinference(hide_messages=True),
    "openllmetry": _openllmetry(use_attributes=True),
    "openllmetry_events": _openllmetry(use_attributes=False),
    "openai_v2_span_only": _openai_v2(latest=True, content="span_only"),
    "openai_v2_log_events": _openai_v2(latest=False, content="true"),
    "openai_v2_event_only": _openai_v2(latest=True, content="event_only"),
    "openai_v2_no_content": _openai_v2(latest=False, content=None),
    "openai_v2_latest_no_content": _openai_v2(latest=True, content=None),
}


@contextmanager
def _instrumented(name: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Tracer, Telemetry]]:
    """Providers of the test's own (never the global ones), the instrumentation on while inside; on leaving,
    uninstrumented and what was collected in the `Telemetry`."""
    span_exporter = InMemorySpanExporter()
    log_exporter = InMemoryLogRecordExporter()
    meter_provider = MeterProvider(shutdown_on_exit=False)  # no reader: the metrics are not looked at
    providers = Providers(
        TracerProvider(shutdown_on_exit=False),
        LoggerProvider(shutdown_on_exit=False, meter_provider=meter_provider),
        meter_provider,
    )
    providers.tracer.add_span_processor(SimpleSpanProcessor(span_exporter))
    providers.logger.add_log_record_processor(SimpleLogRecordProcessor(log_exporter))
    instrumentor = INSTRUMENTATIONS[name](providers, monkeypatch)
    telemetry = Telemetry()
    try:
        yield providers.tracer.get_tracer("shop.support_agent"), telemetry
    finally:
        instrumentor.uninstrument()
        left = unwrap_leftovers()
        telemetry.spans = span_exporter.get_finished_spans()
        telemetry.logs = log_exporter.get_finished_logs()
        providers.tracer.shutdown()
        providers.logger.shutdown()
        meter_provider.shutdown()
    # Only OpenLLMetry is known to leave its wrappers behind; another instrumentation doing so is news.
    assert name.startswith("openllmetry") or left == [], left


def unwrap_leftovers() -> list[str]:
    """Remove the wrappers an instrumentor left on the `openai` client's classes after `uninstrument()`; the
    names of the methods it left wrapped.

    `openai` wraps nothing with wrapt itself, so any wrapt wrapper still there is a leftover. OpenLLMetry
    0.62.4 leaves every method it wrapped (chat and legacy completions, embeddings, responses, …): it unwraps
    them by dotted paths such as "openai.resources.chat.completions" + "Completions.create", which
    opentelemetry-instrumentation 0.65's `unwrap` splits into module "openai.resources.chat" and object
    "completions", so it finds nothing to unwrap. Left there, every later test in the process would run
    through one more OpenLLMetry wrapper per test that instrumented it."""
    left: list[str] = []
    for module_name, module in list(sys.modules.items()):
        if module is None or not (module_name == "openai" or module_name.startswith("openai.")):
            continue
        for owner in list(vars(module).values()):
            if not isinstance(owner, type) or not owner.__module__.startswith("openai"):
                continue
            for attribute, value in list(vars(owner).items()):
                if isinstance(value, wrapt.FunctionWrapper):
                    while isinstance(value, wrapt.FunctionWrapper):
                        value = value.__wrapped__
                    setattr(owner, attribute, value)
                    left.append(f"{owner.__module__}.{owner.__qualname__}.{attribute}")
    return left


def record(name: str, monkeypatch: pytest.MonkeyPatch, cases: tuple[AgentCase, ...] = CASES) -> Telemetry:
    """Run `cases` through the agent under instrumentation `name`; what the SDK collected."""
    with (
        FakeOpenAI(models=[MODEL]) as fake,
        openai.OpenAI(base_url=fake.base_url, api_key="test", max_retries=0) as client,
    ):
        fake.responder = respond
        with _instrumented(name, monkeypatch) as (tracer, telemetry):
            for case in cases:
                with tracer.start_as_current_span(
                    "support_agent", attributes={"evalward.case_id": case.case_id}
                ) as span:
                    telemetry.traces[case.case_id] = span.get_span_context().trace_id
                    run_agent(client, case)
    return telemetry
