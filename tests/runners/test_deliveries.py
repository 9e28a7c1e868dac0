"""Deliveries start one per event loop turn (`runners.deliveries`): a task made ready meanwhile (a worker whose
agent answered) runs after at most one of them, never after a whole burst; every item is still delivered,
in order, when the run drains or stops."""

from __future__ import annotations

import asyncio

from evalward.runners.deliveries import Deliveries


async def test_a_task_made_ready_waits_for_at_most_one_delivery_of_a_burst() -> None:
    events: list[str] = []

    async def deliver(item: int) -> None:
        events.append(f"delivered {item}")

    deliveries: Deliveries[int] = Deliveries(deliver, lambda task: None)
    answered = asyncio.Event()

    async def worker() -> None:
        await answered.wait()
        events.append("worker")

    waiting = asyncio.create_task(worker())
    await asyncio.sleep(0)
    for item in range(20):
        deliveries.add(item)
    answered.set()
    await deliveries.drain()
    await waiting
    assert events.index("worker") <= 1
    assert [e for e in events if e != "worker"] == [f"delivered {item}" for item in range(20)]
    assert not deliveries.started


async def test_stopping_delivers_what_waits_and_reports_each_finished_delivery() -> None:
    delivered: list[int] = []
    finished: list[asyncio.Task[None]] = []

    async def deliver(item: int) -> None:
        await asyncio.sleep(0.01)
        if item == 3:
            raise ValueError("scoring failed")
        delivered.append(item)

    deliveries: Deliveries[int] = Deliveries(deliver, finished.append)
    for item in range(6):
        deliveries.add(item)
    await deliveries.stop()
    assert sorted(delivered) == [0, 1, 2, 4, 5]
    assert len(finished) == 6
    errors = [task.exception() for task in finished if task.exception() is not None]
    assert [str(error) for error in errors] == ["scoring failed"]
