"""Children told together without a yield (`runtime.agent._yield_batch.take_wave`), as OpenClaw
2026.9.6's requester-settle wake: once two or more children of a parent that is no subagent,
spawned while the others ran (a connected wave), have each been told and nothing of the
parent's tree is still owed, one settle run tells them all, its message asking for no reply
when the answer was given, its id without a yield's suffix."""

from __future__ import annotations

from runtime.agent._run import TrackedRun
from runtime.agent._subagent_book import SpawnedRun, TaskBook
from runtime.agent._yield_batch import batch_run_id, settle_message, take_waves

MAIN = "agent:main:main"


class Link:
    parentAgent = "main"
    label = None
    announce = True
    cleanup = None
    requesterRun = "p1"

    def __init__(self, parent: str) -> None:
        self.parentKey = parent


def child(book: TaskBook, n: int, created: int, parent: str = MAIN) -> SpawnedRun:
    key = f"agent:main:subagent:{n}"
    record = TrackedRun(run_id=f"r{n}", session_key=key, session_id="s", agent_id="main")
    run = SpawnedRun(record, parent, key, f"c{n}", link=Link(parent))
    run.created_at = created
    book.add(run)
    return run


def ready(book: TaskBook, run: SpawnedRun) -> list[list[SpawnedRun]]:
    """`run` was told on its own and its spawning run ended: the waves to settle now."""
    run.ready = True
    return take_waves(book, run.parent_key)


def end(run: SpawnedRun, at: int) -> None:
    rec = run.record
    assert isinstance(rec, TrackedRun)
    rec.status, rec.ended_at = "ok", at
    rec.final = {"payloads": [{"text": f"{run.label} done"}], "meta": {}}
    rec.done.set()
    run.delivered = True  # told on its own


def test_the_last_of_a_wave_to_be_told_settles_it_once() -> None:
    book = TaskBook()
    a, b = child(book, 1, created=10), child(book, 2, created=20)
    end(a, 30)
    assert ready(book, a) == []  # b still runs
    end(b, 40)
    assert ready(book, b) == [[a, b]]
    assert a.waved and b.waved and ready(book, b) == []
    message = settle_message([a, b])
    assert message is not None
    assert "\n[Subagent Context] Reply ONLY: NO_REPLY only if you already delivered the " in (
        message
    )
    assert "still requires your visible final answer" not in message
    run_id = batch_run_id("main", MAIN, [b, a])
    assert run_id == f"announce:requester-settle:main:{MAIN}:r1,r2"  # no yield suffix


def test_children_that_did_not_overlap_are_not_one_wave() -> None:
    book = TaskBook()
    a = child(book, 1, created=10)
    end(a, 20)
    b = child(book, 2, created=30)  # spawned after a had ended
    end(b, 40)
    assert ready(book, a) == []  # b still owed
    assert ready(book, b) == []  # each alone in its wave
    assert a.waved and b.waved


def test_a_subagent_parent_and_a_pending_grandchild() -> None:
    book = TaskBook()
    boss = "agent:main:subagent:9"
    a, b = child(book, 1, created=10, parent=boss), child(book, 2, created=11, parent=boss)
    end(a, 20)
    end(b, 21)
    ready(book, a)
    assert ready(book, b) == [] and b.waved  # a subagent's: only its yield settles them
    c, d = child(book, 3, created=10), child(book, 4, created=11)
    grandchild = child(book, 5, created=12, parent=c.child_key)
    end(c, 20)
    end(d, 21)
    ready(book, c)
    assert ready(book, d) == [] and not c.waved  # c's own child still runs
    end(grandchild, 30)
    assert ready(book, grandchild) == []  # (its parent is a subagent)
    assert book.parent_of(c.child_key) == MAIN
    assert take_waves(book, MAIN) == [[c, d]]  # what `tell` asks next
