"""The CPUs a run and its history writer use: one of them the writer's, the others the run's.

`evalward run` hands its finished results to a writer process (`store.writer_process`) so that the database's
work runs on another core than the run's. Left to the scheduler, a machine with two CPUs (a CI runner's)
kept putting the run and the writer on one CPU at times: the writer woke for each batch, and either it or the
run's thread moved onto the other's CPU. Measured on such a machine (issue #33), a 2,000-case model-free run
with its history took 0.88 s with the scheduler placing both processes and 0.79 s with each kept on a CPU of
its own; its `--no-history` twin took 0.73 s.

So when the process may run on two CPUs or more, `separate` gives the writer the last of them and the run's
thread the others (threads it starts afterwards inherit that), and `restore` gives the thread all of them back
once the writer is done. A process the run starts (a subprocess agent) is the user's, not ours: `release`
gives it every CPU the run had. With one CPU, or without `sched_setaffinity` (macOS, Windows), nothing is
placed. (A process an in-process agent starts itself, through `multiprocessing` say, inherits the run thread's
CPUs while the writer lives: only the processes the run starts are given them all back.)
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Placement:
    """A thread kept off the writer's CPU, and the CPUs it (and the processes it starts) may use otherwise."""

    thread_id: int
    cpus: frozenset[int]


_current: Placement | None = None


def separate(writer_pid: int) -> Placement | None:
    """Keep the writer process `writer_pid` on the last CPU this thread may use, and this thread on the
    others; None when there are not two CPUs to separate them on (nothing is changed then)."""
    global _current
    if not hasattr(os, "sched_getaffinity") or not hasattr(os, "sched_setaffinity"):
        return None
    try:
        cpus = frozenset(os.sched_getaffinity(0))
        if len(cpus) < 2:
            return None
        writer_cpu = max(cpus)
        os.sched_setaffinity(writer_pid, {writer_cpu})
        os.sched_setaffinity(0, cpus - {writer_cpu})
    except OSError:  # the writer already gone, or a policy that refuses: the scheduler decides, as before
        return None
    _current = Placement(thread_id=threading.get_native_id(), cpus=cpus)
    return _current


def restore(placement: Placement | None) -> None:
    """Give the thread `separate` placed every CPU it had before."""
    global _current
    if placement is None:
        return
    with contextlib.suppress(OSError):  # the thread has ended: nothing to give back
        os.sched_setaffinity(placement.thread_id, placement.cpus)
    if _current is placement:
        _current = None


def release(pid: int) -> None:
    """Give process `pid`, started by the run, every CPU the run had before its writer was placed."""
    placement = _current
    if placement is not None:
        with contextlib.suppress(OSError):  # it has exited already
            os.sched_setaffinity(pid, placement.cpus)
