"""Memory across sessions on a real gateway (loopback, the `local` model's `[[tool:...]]`
directives): a fact written on Monday is found on Tuesday by a new session with
`memory_search`; `memory_get` reads memory files and nothing else; a bare `/new` loads
today's and yesterday's notes; the index follows an edit made on disk; the methods answer
with OpenClaw's shapes; with an embeddings endpoint (a loopback one) searches are hybrid, and
the endpoint failing leaves keyword results with a note, never a failed run."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import trio

from tests.conftest import local_config, open_client, running_gateway
from tests.e2e._events import Events, recorder_events, run_events
from tests.runtime.memory._embeddings_server import embeddings_server


def _tool_results(events: Events, run_id: str) -> list[dict[str, Any]]:
    out = []
    for payload in run_events(events, run_id, "tool"):
        data = payload["data"]
        if data["phase"] == "result" and data["name"] != "tool_call":
            out.append(data)
    return out


def _details(result: dict[str, Any]) -> dict[str, Any]:
    details: dict[str, Any] = result["result"]["details"]
    assert json.loads(result["result"]["content"][0]["text"]) == details
    return details


async def _run(client: Any, key: str, run_id: str, message: str) -> dict[str, Any]:
    final: dict[str, Any] = await client.request(
        "agent",
        {"message": message, "idempotencyKey": run_id, "sessionKey": key},
        expect_final=True,
    )
    assert final["status"] == "ok", final
    return final


async def test_a_fact_written_on_monday_is_found_by_a_new_session_on_tuesday(
    tmp_path: Path,
) -> None:
    events, on_event = recorder_events()
    async with running_gateway(tmp_path) as gw:
        tuesday = dt.datetime(2026, 12, 8, 10, 0).astimezone().timestamp()
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=on_event) as client:
                write = json.dumps(
                    {
                        "path": "memory/2026-12-07.md",
                        "content": "# Monday\n\nThe launch code word is PELICAN.\n",
                    }
                )
                await _run(client, "agent:main:monday", "mon", f"[[tool:write {write}]]")
                gw.supervisor.services.memory.clock = lambda: tuesday
                query = json.dumps({"query": "launch code word"})
                await _run(client, "agent:main:tuesday", "tue", f"[[tool:memory_search {query}]]")
                get = json.dumps({"path": "memory/2026-12-07.md", "from": 3, "lines": 1})
                await _run(client, "agent:main:tuesday", "get", f"[[tool:memory_get {get}]]")
    (found,) = _tool_results(events, "tue")
    assert found["name"] == "memory_search" and not found["isError"]
    details = _details(found)
    assert details["provider"] == "none" and details["mode"] == "fts-only"
    assert details["citations"] == "auto"
    hit = details["results"][0]
    assert hit["path"] == "memory/2026-12-07.md"
    assert (hit["startLine"], hit["endLine"]) == (1, 3)
    assert "PELICAN" in hit["snippet"] and hit["snippet"].endswith(
        "Source: memory/2026-12-07.md#L1-L3"
    )
    assert hit["source"] == hit["corpus"] == "memory"
    assert hit["citation"] == "memory/2026-12-07.md#L1-L3"
    assert 0 < hit["score"] <= 1
    (got,) = _tool_results(events, "get")
    assert _details(got) == {
        "status": "ok",
        "text": "The launch code word is PELICAN.",
        "path": "memory/2026-12-07.md",
        "from": 3,
        "lines": 1,
    }


async def test_memory_get_reads_only_memory_files(tmp_path: Path) -> None:
    events, on_event = recorder_events()
    async with running_gateway(tmp_path) as gw:
        workspace = tmp_path / "state" / "workspaces" / "main"
        with trio.fail_after(30):
            async with open_client(gw, caps=["tool-events"], on_event=on_event) as client:
                await _run(client, "agent:main:x", "boot", "hello")  # makes the workspace
                (workspace / "secret.txt").write_text("not memory\n")
                (workspace / "MEMORY.md").write_text("long-term\n")
                for i, path in enumerate(
                    ["secret.txt", "../../etc/passwd", "/etc/passwd", "memory/../secret.txt",
                     "MEMORY.md", "memory/missing.md"]
                ):
                    args = json.dumps({"path": path})
                    await _run(client, "agent:main:x", f"g{i}", f"[[tool:memory_get {args}]]")
    results = [_tool_results(events, f"g{i}")[0] for i in range(6)]
    for refused in results[:4]:
        assert refused["isError"]
        details = _details(refused)
        assert details["status"] == "error" and details["code"] == "MEMORY_PATH_NOT_ALLOWED"
        assert details["text"] == ""
    assert _details(results[4])["text"] == "long-term"
    assert _details(results[5]) == {"status": "not_found", "text": "", "path": "memory/missing.md"}


async def test_a_bare_new_loads_todays_and_yesterdays_notes(tmp_path: Path) -> None:
    async with running_gateway(tmp_path) as gw:
        workspace = tmp_path / "state" / "workspaces" / "main"
        today = dt.datetime.now().astimezone().date()
        notes = workspace / "memory"
        notes.mkdir(parents=True)
        (notes / f"{today}.md").write_text("TODAY-NOTE: call the plumber\n")
        (notes / f"{today - dt.timedelta(days=1)}.md").write_text("YESTERDAY-NOTE: paid rent\n")
        (notes / f"{today - dt.timedelta(days=1)}-trip.md").write_text("SLUG-NOTE: trip\n")
        (notes / f"{today - dt.timedelta(days=2)}.md").write_text("OLD-NOTE: too old\n")
        with trio.fail_after(30):
            async with open_client(gw) as client:
                key = "agent:main:fresh"
                await client.request(
                    "chat.send", {"sessionKey": key, "message": "/new", "idempotencyKey": "n1"}
                )
                await client.request("agent.wait", {"runId": "n1", "timeoutMs": 20_000})
                history = await client.request("chat.history", {"sessionKey": key})
    user = next(m for m in history["messages"] if m["role"] == "user")
    text = user["content"] if isinstance(user["content"], str) else user["content"][0]["text"]
    assert text.startswith("[Startup context loaded by runtime]")
    for marker in ("TODAY-NOTE", "YESTERDAY-NOTE", "SLUG-NOTE"):
        assert marker in text
    assert "OLD-NOTE" not in text
    assert f"[Untrusted daily memory: memory/{today}.md]" in text
    assert "A new session was started" in text


async def test_the_index_follows_an_edit_on_disk_and_the_methods_answer(tmp_path: Path) -> None:
    async with running_gateway(tmp_path) as gw:
        workspace = tmp_path / "state" / "workspaces" / "main"
        with trio.fail_after(30):
            async with open_client(gw) as client:
                await _run(client, "agent:main:x", "boot", "hello")
                (workspace / "memory").mkdir()
                note = workspace / "memory" / "pets.md"
                note.write_text("The cat is called Miso.\n")
                first = await client.request("memory.search", {"query": "cat"})
                note.write_text("The dog is called Bruno, a much longer note now.\n")
                second = await client.request("memory.search", {"query": "dog", "maxResults": 3})
                gone = await client.request("memory.search", {"query": "Miso"})
                status = await client.request("doctor.memory.status", {})
                diary = await client.request("doctor.memory.dreamDiary", {})
    assert first["agentId"] == "main" and first["provider"] == "none"
    assert first["searchMode"] == "fts-only"
    assert [r["path"] for r in first["results"]] == ["memory/pets.md"]
    assert set(first["results"][0]) == {
        "path", "startLine", "endLine", "score", "textScore", "snippet", "source"
    }
    assert "Bruno" in second["results"][0]["snippet"]
    assert gone["results"] == []
    assert status["agentId"] == "main" and status["provider"] == "none"
    assert status["embedding"]["ok"] is False and status["embedding"]["error"]
    assert status["dreaming"]["enabled"] is False
    assert status["index"]["files"] == 1 and status["index"]["chunks"] == 1
    assert diary == {"agentId": "main", "found": False, "path": "DREAMS.md"}


async def test_hybrid_search_over_a_gateway_and_a_failing_endpoint_never_fails_a_run(
    tmp_path: Path,
) -> None:
    events, on_event = recorder_events()
    with trio.fail_after(30):
        async with embeddings_server() as server:
            config = local_config(
                memory={
                    "search": {
                        "provider": "openai",
                        "model": "hash-256",
                        "remote": {"baseUrl": server.base_url, "apiKey": "sk-test"},
                    }
                }
            )
            async with (
                running_gateway(tmp_path, config) as gw,
                open_client(gw, caps=["tool-events"], on_event=on_event) as client,
            ):
                write = json.dumps(
                    {"path": "memory/2026-12-07.md", "content": "Carol is allergic to peanuts.\n"}
                )
                await _run(client, "agent:main:a", "w", f"[[tool:write {write}]]")
                query = json.dumps({"query": "Carol allergies"})
                await _run(client, "agent:main:b", "hy", f"[[tool:memory_search {query}]]")
                method = await client.request("memory.search", {"query": "peanuts"})
                status = await client.request("doctor.memory.status", {"probe": True})
                server.mode = "fail"
                await _run(client, "agent:main:b", "down", f"[[tool:memory_search {query}]]")
                degraded = await client.request("memory.search", {"query": "peanuts"})
                probe = await client.request("doctor.memory.status", {"probe": True})
    (hybrid,) = _tool_results(events, "hy")
    details = _details(hybrid)
    assert details["mode"] == "hybrid" and details["model"] == "hash-256"
    assert details["provider"] == "openai" and "warning" not in details
    assert details["results"][0]["path"] == "memory/2026-12-07.md"
    assert 0 < details["results"][0]["vectorScore"] <= 1
    assert method["searchMode"] == "hybrid" and method["results"][0]["vectorScore"] > 0
    assert status["provider"] == "openai" and status["embedding"] == {"ok": True}
    # the endpoint down: keyword results with a note, the run ends ok
    (down,) = _tool_results(events, "down")
    assert not down["isError"]
    details = _details(down)
    assert details["mode"] == "fts-only" and "keyword results only" in details["warning"]
    assert "HTTP 500" in details["warning"]
    assert "PEANUTS" in details["results"][0]["snippet"].upper()
    assert degraded["searchMode"] == "fts-only" and "HTTP 500" in degraded["warning"]
    assert degraded["results"] and "vectorScore" not in degraded["results"][0]
    assert probe["embedding"]["ok"] is False and "HTTP 500" in probe["embedding"]["error"]
