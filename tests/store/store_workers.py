"""Code run in other processes by the concurrency and kill tests (importable by spawned children)."""

from __future__ import annotations

import sys
from typing import Any

from store_factories import make_case, make_run

from evalward.store import open_store


def write_into_shared_run(url: str, run_id: str, case_ids: list[str], barrier: Any, results: Any) -> None:
    """Record `case_ids` into an existing run; report how many writes were new (True)."""
    try:
        with open_store(url) as store:
            barrier.wait()
            written = sum(store.record_case(run_id, make_case(case_id)) for case_id in case_ids)
        results.put(("ok", written))
    except BaseException as exc:  # report, so the parent shows the child's error
        results.put(("error", repr(exc)))


def write_own_run(url: str, run_id: str, count: int, barrier: Any, results: Any) -> None:
    """Open the (possibly empty, unmigrated) database at the same moment as the others, then write a run."""
    try:
        barrier.wait()
        with open_store(url) as store:
            case_ids = [f"case-{i:03d}" for i in range(count)]
            run = make_run(run_id, case_ids=case_ids)
            store.begin_run(run, [("smoke", case_id, 0) for case_id in case_ids])
            written = sum(store.record_case(run_id, make_case(case_id)) for case_id in case_ids)
            final = store.load_run(run_id).model_copy(update={"status": "complete", "passed": True})
            store.finish_run(final)
        results.put(("ok", written))
    except BaseException as exc:
        results.put(("error", repr(exc)))


def writer_main(argv: list[str]) -> None:
    """`python store_workers.py URL RUN_ID COUNT begin|resume`: record the run's missing items one by one,
    printing `recorded CASE` after each commit (the kill test reads these lines)."""
    url, run_id, count, mode = argv[0], argv[1], int(argv[2]), argv[3]
    with open_store(url) as store:
        if mode == "begin":
            case_ids = [f"case-{i:03d}" for i in range(count)]
            store.begin_run(make_run(run_id, case_ids=case_ids), [("smoke", c, 0) for c in case_ids])
            print("begun", flush=True)
        for _set_id, case_id, _repetition in store.missing_items(run_id):
            store.record_case(run_id, make_case(case_id))
            print(f"recorded {case_id}", flush=True)
        final = store.load_run(run_id).model_copy(update={"status": "complete", "passed": True})
        store.finish_run(final)
    print("finished", flush=True)


if __name__ == "__main__":
    writer_main(sys.argv[1:])
