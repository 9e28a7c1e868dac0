"""Prometheus text exposition (format 0.0.4) for `GET /metrics`: counters and histograms, no dependency.

Counters end in `_total`; a histogram exposes cumulative `_bucket{le="…"}` counts, `_sum` and `_count`.
Label values are escaped (backslash, double quote, newline) as the format requires.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence

from evalward.github.events import HANDLED_EVENTS

LATENCY_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
JOB_BUCKETS_S = (1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)

LabelSet = tuple[tuple[str, str], ...]

KNOWN_WEBHOOK_EVENTS = HANDLED_EVENTS | {"ping"}
"""The `X-GitHub-Event` values evalward handles; each is its own `event` label value."""


def webhook_event_label(event: str, *, verified: bool) -> str:
    """The `event` label of a delivery: a known event name once the signature is verified, `other` for any
    other verified event, `unverified` before (or without) a valid signature. Label values are series, so
    a header from an unauthenticated request must never become one."""
    if not verified:
        return "unverified"
    return event if event in KNOWN_WEBHOOK_EVENTS else "other"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(labels: LabelSet, extra: tuple[str, str] | None = None) -> str:
    items = [*labels, *([extra] if extra else [])]
    if not items:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in items) + "}"


def _number(value: float) -> str:
    if value == float("inf"):
        return "+Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


class Counter:
    def __init__(self, name: str, help_text: str) -> None:
        self.name, self.help = name, help_text
        self._values: dict[LabelSet, float] = {}
        self._lock = threading.Lock()

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        with self._lock:
            self._values[key] = self._values.get(key, 0.0) + amount

    def value(self, **labels: str) -> float:
        return self._values.get(tuple(sorted(labels.items())), 0.0)

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} counter"]
        with self._lock:
            lines += [f"{self.name}{_labels(k)} {_number(v)}" for k, v in sorted(self._values.items())]
        return lines


class Histogram:
    def __init__(self, name: str, help_text: str, buckets: Sequence[float]) -> None:
        self.name, self.help = name, help_text
        self.buckets = tuple(sorted(buckets))
        self._series: dict[LabelSet, tuple[list[int], list[float]]] = {}
        self._lock = threading.Lock()

    def observe(self, value: float, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        with self._lock:
            counts, total = self._series.setdefault(key, ([0] * (len(self.buckets) + 1), [0.0]))
            for index, bound in enumerate(self.buckets):
                if value <= bound:
                    counts[index] += 1
            counts[-1] += 1
            total[0] += value

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} histogram"]
        with self._lock:
            for key, (counts, total) in sorted(self._series.items()):
                for bound, count in zip((*self.buckets, float("inf")), counts, strict=True):
                    lines.append(f"{self.name}_bucket{_labels(key, ('le', _number(bound)))} {count}")
                lines.append(f"{self.name}_sum{_labels(key)} {_number(total[0])}")
                lines.append(f"{self.name}_count{_labels(key)} {counts[-1]}")
        return lines


def gauge_lines(name: str, help_text: str, values: Mapping[LabelSet, float]) -> list[str]:
    """A gauge read at scrape time (e.g. jobs per status from the database)."""
    lines = [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
    lines += [f"{name}{_labels(k)} {_number(v)}" for k, v in sorted(values.items())]
    return lines


class ServerMetrics:
    """The daemon's metrics; one instance per process."""

    def __init__(self) -> None:
        self.webhooks = Counter("evalward_webhook_deliveries_total", "Webhook deliveries by event and outcome.")
        self.webhook_seconds = Histogram(
            "evalward_webhook_ack_seconds", "Time from request to acknowledgement.", LATENCY_BUCKETS_S
        )
        self.http = Counter("evalward_http_requests_total", "HTTP requests by route and status code.")
        self.jobs_finished = Counter(
            "evalward_jobs_finished_total", "Jobs finished by this process, by kind and status."
        )
        self.job_seconds = Histogram("evalward_job_seconds", "Wall time of jobs run by this process.", JOB_BUCKETS_S)

    def render(self, extra: Iterable[list[str]] = ()) -> str:
        blocks = [
            self.webhooks.render(),
            self.webhook_seconds.render(),
            self.http.render(),
            self.jobs_finished.render(),
            self.job_seconds.render(),
            *extra,
        ]
        return "\n".join(line for block in blocks for line in block) + "\n"
