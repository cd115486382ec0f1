"""The device pairing store: OpenClaw's request/approve/token rules, and its file."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
import trio

from runtime.devices._pairing import (
    PENDING_TTL_MS,
    Approved,
    Forbidden,
    PairingInput,
    PairingStore,
    PairingStoreError,
    TokenRefused,
)

NOW = 1_800_000_000_000


def ask(store: PairingStore, scopes: list[str], *, device: str = "d1", now: int = NOW, **kw):
    return store.request(
        PairingInput(
            device_id=device,
            public_key=kw.pop("key", f"key-{device}"),
            role=kw.pop("role", "operator"),
            scopes=scopes,
            silent=kw.pop("silent", False),
            client_id="cli",
            client_mode="cli",
            **kw,
        ),
        now=now,
    )


def approve(store: PairingStore, request_id: str, caller: list[str] | None, now: int = NOW):
    return store.approve(request_id, caller_scopes=caller, approved_via="owner", now=now)


def test_a_request_is_refreshed_superseded_and_expires(tmp_path: Path) -> None:
    store = PairingStore.empty(tmp_path)
    first = ask(store, ["operator.read"])
    assert first.created and not first.superseded and first.request.isRepair is False
    same = ask(store, ["operator.read"], now=NOW + 1000)
    assert not same.created and same.request.requestId == first.request.requestId
    assert same.request.refreshedAtMs == NOW + 1000
    wider = ask(store, ["operator.admin"], now=NOW + 2000)
    assert wider.created and [p.requestId for p in wider.superseded] == [first.request.requestId]
    assert wider.request.scopes == ["operator.read", "operator.admin"]  # merged
    pending, _ = store.records(now=NOW + 2000 + PENDING_TTL_MS)
    assert [p.requestId for p in pending] == [wider.request.requestId]
    assert store.records(now=NOW + 2001 + PENDING_TTL_MS)[0] == []  # 5 minutes, then gone
    assert "refreshedAtMs" not in first.request.public()


def test_approval_needs_the_callers_scopes_and_issues_tokens(tmp_path: Path) -> None:
    store = PairingStore.empty(tmp_path)
    req = ask(store, ["operator.admin"]).request
    assert approve(store, req.requestId, None) == Forbidden(
        "caller-scopes-required", "operator.admin"
    )
    refused = approve(store, req.requestId, ["operator.pairing", "operator.write"])
    assert refused == Forbidden("caller-missing-scope", "operator.admin")
    assert refused.message == "missing scope: operator.admin"
    done = approve(store, req.requestId, ["operator.admin"])
    assert isinstance(done, Approved)
    device = done.device
    assert device.approvedVia == "owner" and device.roles == ["operator"]
    assert device.scopes == ["operator.admin"]
    token = device.tokens["operator"]  # type: ignore[index]
    assert token.scopes == ["operator.admin", "operator.read", "operator.write"]
    assert approve(store, req.requestId, ["operator.admin"]) is None  # consumed
    scoped_out = ask(store, ["node.camera"], device="d2").request
    assert approve(store, scoped_out.requestId, ["operator.admin"]) == Forbidden(
        "scope-outside-requested-roles", "node.camera"
    )


def test_a_scope_upgrade_merges_and_rotates_the_token(tmp_path: Path) -> None:
    store = PairingStore.empty(tmp_path)
    first = approve(store, ask(store, ["operator.read"]).request.requestId, ["operator.read"])
    assert isinstance(first, Approved)
    old = first.device.tokens["operator"]  # type: ignore[index]
    upgrade = ask(store, ["operator.admin"], now=NOW + 5).request
    assert upgrade.isRepair is True
    second = approve(store, upgrade.requestId, ["operator.admin"], now=NOW + 5)
    assert isinstance(second, Approved)
    assert second.device.scopes == ["operator.read", "operator.admin"]
    new = second.device.tokens["operator"]  # type: ignore[index]
    assert new.token != old.token and new.rotatedAtMs == NOW + 5 and new.createdAtMs == NOW
    assert new.scopes == ["operator.admin", "operator.read", "operator.write"]


def test_tokens_are_verified_within_the_approved_baseline(tmp_path: Path) -> None:
    store = PairingStore.empty(tmp_path)
    approve(store, ask(store, ["operator.write"]).request.requestId, ["operator.write"])
    entry = store.ensure_token("d1", role="operator", scopes=["operator.read"], now=NOW)
    assert entry is not None and entry.scopes == ["operator.read", "operator.write"]
    assert store.ensure_token("d1", role="operator", scopes=["operator.admin"], now=NOW) is None
    assert store.ensure_token("d1", role="node", scopes=[], now=NOW) is None
    check = store.verify_token
    assert check("d1", entry.token, role="operator", scopes=["operator.read"], now=NOW) is None
    assert check("d1", "x", role="operator", scopes=[], now=NOW) == "token-mismatch"
    assert check("d1", entry.token, role="operator", scopes=["operator.admin"], now=NOW) == (
        "scope-mismatch"
    )
    assert check("d9", entry.token, role="operator", scopes=[], now=NOW) == "device-not-paired"
    assert check("d1", entry.token, role="node", scopes=[], now=NOW) == "token-missing"
    rotated = store.rotate_token(
        "d1", role="operator", scopes=None, caller_scopes=["operator.read"], now=NOW
    )
    assert rotated == TokenRefused("caller-missing-scope", "operator.write")
    rotated = store.rotate_token(
        "d1", role="operator", scopes=None, caller_scopes=None, now=NOW + 1
    )
    assert not isinstance(rotated, TokenRefused) and rotated.token != entry.token
    assert store.rotate_token(
        "d1", role="operator", scopes=["operator.admin"], caller_scopes=None, now=NOW
    ) == (TokenRefused("scope-outside-approved-baseline"))
    revoked = store.revoke_token("d1", role="operator", caller_scopes=None, now=NOW + 2)
    assert not isinstance(revoked, TokenRefused) and revoked.revokedAtMs == NOW + 2
    assert check("d1", rotated.token, role="operator", scopes=[], now=NOW) == "token-revoked"
    assert store.paired("d1").effective_roles() == []  # type: ignore[union-attr]
    assert store.revoke_token("d9", role="operator", caller_scopes=None, now=NOW) == TokenRefused(
        "unknown-device-or-role"
    )


def test_silent_pairings_of_the_same_client_are_pruned(tmp_path: Path) -> None:
    store = PairingStore.empty(tmp_path)
    for device, now in (("old", NOW), ("live", NOW), ("new", NOW + 120_000)):
        req = ask(store, [], device=device, now=now).request
        store.approve(req.requestId, caller_scopes=[], approved_via="silent", now=now)
    removed = store.prune_superseded_silent("new", connected={"live"}, now=NOW + 120_000)
    assert [d.deviceId for d in removed] == ["old"]
    assert {d.deviceId for d in store.records(now=NOW)[1]} == {"live", "new"}


async def test_the_file_is_written_atomically_0600_and_read_back(tmp_path: Path) -> None:
    store = PairingStore.empty(tmp_path)
    approve(store, ask(store, ["operator.read"]).request.requestId, ["operator.read"])
    with trio.fail_after(10):
        await store.flush()
    path = tmp_path / "devices" / "pairing.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    # no temporary file left (the lock file of the processes sharing it stays)
    assert sorted(p.name for p in path.parent.iterdir()) == ["pairing.json", "pairing.json.lock"]
    again = PairingStore.load(path)
    assert again.paired("d1") == store.paired("d1")
    writes = store.writes
    store.touch("d1", now=NOW + 9, reason="connect")
    await store.flush()
    assert store.writes == writes  # metadata alone waits for the next write ...
    await store.flush(include_metadata=True)
    assert store.writes == writes + 1  # ... or the close
    assert json.loads(path.read_text())["paired"]["d1"]["lastSeenAtMs"] == NOW + 9
    path.write_text("[1, 2]")
    with pytest.raises(PairingStoreError, match="is not a device pairing store"):
        PairingStore.load(path)


async def test_a_failed_write_is_reported_and_retried(tmp_path: Path) -> None:
    blocker = tmp_path / "devices"
    blocker.write_text("a file where the folder should be")
    store = PairingStore.empty(tmp_path)
    ask(store, ["operator.read"])
    with trio.fail_after(10):
        with pytest.raises(PairingStoreError, match="cannot write the pairing store"):
            await store.flush()
        assert store.dirty
        blocker.unlink()
        await store.flush()
    assert store.writes == 1 and (blocker / "pairing.json").exists()


async def test_processes_sharing_the_file_see_and_keep_each_others_changes(
    tmp_path: Path,
) -> None:
    """`--workers N`: two stores on one file (two workers). A device paired through one is
    known to the other after `refresh`; changes made on both before either flushes all
    survive (each flush takes in what the other wrote); a removal on one stays removed."""
    with trio.fail_after(10):
        path = tmp_path / "devices" / "pairing.json"
        one, two = PairingStore.load(path), PairingStore.load(path)
        approve(one, ask(one, ["operator.read"], device="d1").request.requestId, ["operator.read"])
        await one.flush()
        assert two.paired("d1") is None
        await two.refresh()
        assert two.paired("d1") == one.paired("d1")
        writes = two.writes
        await two.refresh()  # nothing changed: nothing read, nothing written
        assert two.writes == writes
        # both change the records before either writes
        approve(one, ask(one, ["operator.read"], device="d2").request.requestId, ["operator.read"])
        approve(two, ask(two, ["operator.read"], device="d3").request.requestId, ["operator.read"])
        assert two.remove("d1") is not None
        await two.flush()
        await one.flush()
        on_disk = PairingStore.load(path)
        assert sorted(d.deviceId for d in on_disk.records(now=NOW)[1]) == ["d2", "d3"]
        await two.refresh()
        assert two.paired("d2") is not None and two.paired("d1") is None
        assert one.paired("d3") is not None and one.paired("d1") is None
