"""Garbage collection of the `evalward` process during its start-up.

A 1-case run is almost all imports: sqlalchemy, pydantic, click, rich and evalward leave ~83,000
tracked objects that live until the process ends. CPython's cyclic collector, run every 700 allocations,
re-scans them again and again while they are being created: 160 collections, ~50 ms of a 1-case run, for
no garbage (measured with `gc.callbacks`). The `evalward` command therefore pauses collection when it starts
and resumes it when its real work begins (`end_start_up`, called by the pipeline before it runs anything),
with the objects of start-up frozen, as they live as long as the process; a timer resumes it after
`START_UP_SECONDS` whatever the command, so a long-running command (`serve`, a large `validate`) never runs
without it. Objects freed by reference counting are freed as always; only the collection of cycles waits.

In-process callers (tests, `evalward.testing`, `main([...])`) never pause: only the console script does.
"""

from __future__ import annotations

import gc
import threading

START_UP_SECONDS = 1.0
"""Longest pause: start-up takes ~0.4 s; after this the collector runs again even if nothing resumed it."""

_paused = threading.Event()
_timer: threading.Timer | None = None


def pause_during_start_up() -> None:
    """Stop cyclic collection until `end_start_up()` or `START_UP_SECONDS`, whichever comes first."""
    global _timer
    if not gc.isenabled() or _paused.is_set():
        return  # someone else turned it off, or already paused: leave their choice alone
    gc.disable()
    _paused.set()
    _timer = threading.Timer(START_UP_SECONDS, end_start_up)
    _timer.daemon = True  # never keeps the process alive at exit
    _timer.start()


def end_start_up() -> None:
    """Resume cyclic collection if `pause_during_start_up` stopped it; harmless otherwise.

    What start-up allocated is frozen first (moved to the permanent generation, never scanned): re-enabled
    with them still young, the collector's first pass would scan every one of them — a 30 ms pause, measured,
    most of what the pause saved."""
    global _timer
    if not _paused.is_set():
        return
    _paused.clear()
    gc.freeze()
    gc.enable()
    timer, _timer = _timer, None
    if timer is not None and timer is not threading.current_thread():
        timer.cancel()
