"""The stability record: a bounded ring of metadata-only events."""

from __future__ import annotations

from actors.runs import StabilityRecorder


def test_the_ring_keeps_the_last_events_and_counts_the_dropped() -> None:
    rec = StabilityRecorder(capacity=3)
    for n in range(5):
        rec.record("message.processed", outcome="completed", durationMs=n)
    snap = rec.snapshot(limit=10)
    assert [e["seq"] for e in snap["events"]] == [3, 4, 5]
    assert snap["dropped"] == 2 and snap["count"] == 3 and snap["capacity"] == 3
    assert snap["firstSeq"] == 3 and snap["lastSeq"] == 5
    assert rec.snapshot(limit=1)["events"][0]["seq"] == 5
    assert rec.snapshot(since_seq=4)["count"] == 1
    assert rec.snapshot(type_="model.usage")["count"] == 0


def test_exporters_keep_their_latest_state_and_at_most_sixteen() -> None:
    rec = StabilityRecorder()
    rec.exporter_health("otlp", signal="traces", status="started")
    rec.exporter_health("otlp", signal="traces", status="failure", reason="connect_refused")
    rec.exporter_health("otlp", signal="bad signal!", status="failure")  # unsafe: ignored
    snap = rec.snapshot(type_="telemetry.exporter")
    assert [(e["outcome"], e.get("reason")) for e in snap["events"]] == [
        ("failure", "connect_refused")
    ]
    for n in range(20):
        rec.exporter_health(f"x{n}", signal="logs", status="started")
    snap = rec.snapshot(type_="telemetry.exporter", limit=100)
    assert snap["count"] == 16 and snap["dropped"] == 5
    assert rec.snapshot()["count"] == 0  # exporters are not in the event ring
