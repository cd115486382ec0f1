"""Standing grants for scheduled runs, as OpenClaw 2026.9.6 has them ("Standing grants for
automations").

An exec approval raised by a cron job's run in an isolated session (`CronRuns`: the
scheduler registers each such firing's run id with its job, `CronRunSource`; a job that runs
in the main or a named session is asked as any run, as OpenClaw's) carries OpenClaw's `scope` line
(`{kind: "standing-grant", automation, command, expiresInDays?}`); resolved `allow-always`
it mints a grant (`StandingGrants.mint`) instead of an allowlist entry: bound to that agent,
job, job definition (`CronRunSource.revision`: the job's definition without its state, so
pausing and resuming keeps the grant and any edit voids it) and operation (`binding`: the
command text trimmed, the working directory and the hash of the env overrides). Its lifetime
is the resolve's `grantExpiresInDays`, else `tools.exec.grantExpiryDays`, else until revoked.

A later run of the same job whose exec asks (`StandingGrants.use`) runs that exact
operation without a prompt when the newest grant for it is still good: not revoked, not
expired, minted for the job definition the run fires and still has (`CronRunSource.current`:
a job deleted or edited meanwhile voids it), and its minting approval still on record as
allowed always. The use is counted in the same conditional write that checks revocation and
expiry, just before the command spawns, so a revoke on any node wins from the next exec on.
Anything else falls back to the prompt. Not for what allow-always cannot bind (inline eval,
an unresolved executable: `ExecAsk.allow_always` false) or an `ask: always` policy, which
prompt on every occurrence, as OpenClaw's do.

`exec.approval.grants.list` shows the ledger (`view`), newest first, revoked and expired
grants included; `exec.approval.grants.revoke` is idempotent.

An edit of the job's definition voids its grants for good (`job_changed`: the scheduler
calls it), so editing it back does not revive them, as OpenClaw's definition generations
fail closed.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, Protocol

import attrs
import trio

__all__ = [
    "CronRunSource",
    "CronRuns",
    "GrantStore",
    "StandingGrants",
    "grant_binding",
]

MAX_TRACKED_RUNS: Final = 512
DAY_MS: Final = 86_400_000
GrantUse = Literal[
    "consumed",
    "no-grant",
    "revoked",
    "expired",
    "job-revision-changed",
    "job-missing",
    "approval-not-allow-always",
]


@attrs.frozen
class CronRunSource:
    """The cron job a run fires: its agent, id, name, the definition's revision at the
    firing, and how to read the job's revision now (None: the job is gone)."""

    agent_id: str
    job_id: str
    job_name: str
    revision: str
    current: Callable[[], str | None]


class CronRuns:
    """The cron runs in progress, by run id (at most `MAX_TRACKED_RUNS`, oldest dropped)."""

    def __init__(self) -> None:
        self._runs: OrderedDict[str, CronRunSource] = OrderedDict()

    def register(self, run_id: str, source: CronRunSource) -> Callable[[], None]:
        """Record `source` for `run_id`; returns what forgets it. Not a checkpoint."""
        self._runs[run_id] = source
        while len(self._runs) > MAX_TRACKED_RUNS:
            self._runs.popitem(last=False)

        def forget() -> None:
            if self._runs.get(run_id) is source:
                del self._runs[run_id]

        return forget

    def get(self, run_id: str) -> CronRunSource | None:
        return self._runs.get(run_id)


class GrantRowLike(Protocol):
    """A stored grant (the store's `GrantRow`), read-only."""

    @property
    def grant_id(self) -> str: ...

    @property
    def minted_by(self) -> str: ...

    @property
    def agent_id(self) -> str: ...

    @property
    def cron_job_id(self) -> str: ...

    @property
    def job_revision(self) -> str: ...

    @property
    def binding(self) -> str: ...

    @property
    def created_at_ms(self) -> int: ...

    @property
    def expires_at_ms(self) -> int | None: ...

    @property
    def revoked_at_ms(self) -> int | None: ...

    @property
    def revoked_by(self) -> str | None: ...

    @property
    def last_used_at_ms(self) -> int | None: ...

    @property
    def use_count(self) -> int: ...


class GrantStore(Protocol):
    """The store's `ApprovalRecords`, as the grants use it."""

    async def mint(
        self,
        *,
        minted_by: str,
        agent_id: str,
        cron_job_id: str,
        job_revision: str,
        binding: str,
        now_ms: int,
        expires_at_ms: int | None,
    ) -> str: ...

    async def lookup(
        self, agent_id: str, cron_job_id: str, binding: str
    ) -> GrantRowLike | None: ...

    async def consume(self, grant_id: str, now_ms: int) -> bool: ...

    async def grants(self, limit: int) -> list[Any]: ...

    async def void_job(self, cron_job_id: str) -> None: ...

    async def revoke(self, grant_id: str, *, revoked_by: str, now_ms: int) -> str: ...

    async def find(self, approval_id: str) -> dict[str, Any] | None: ...


def grant_binding(command: str, cwd: str | None, env: Mapping[str, str] | None) -> str:
    """The exact operation a grant covers: OpenClaw's `{v: 1, command, cwd, envHash}`."""
    env_hash = None
    if env:
        text = json.dumps(sorted(env.items()), separators=(",", ":"))
        env_hash = hashlib.sha256(text.encode()).hexdigest()
    fields = {"command": command.strip(), "cwd": (cwd or "").strip() or None, "envHash": env_hash}
    return json.dumps({"v": 1, **fields}, sort_keys=True, separators=(",", ":"))


def _operation(binding: str) -> tuple[str, str | None]:
    try:
        parsed = json.loads(binding)
        return str(parsed["command"]), parsed.get("cwd")
    except (ValueError, KeyError, TypeError):
        return "(unreadable)", None


class StandingGrants:
    """The grants in `store` (see the module docstring); `job_names` reads a job's name
    for the ledger (None: unknown or deleted)."""

    def __init__(
        self,
        store: GrantStore,
        *,
        now_ms: Callable[[], int],
        job_names: Callable[[str], str | None] = lambda _: None,
        expiry_days: Callable[[], int | None] = lambda: None,
    ) -> None:
        self._store = store
        self._now_ms = now_ms
        self.job_names = job_names
        self._expiry_days = expiry_days

    @property
    def default_expiry_days(self) -> int | None:
        """`tools.exec.grantExpiryDays` as the config says now (None: until revoked)."""
        return self._expiry_days()

    def scope(self, source: CronRunSource, command: str) -> dict[str, Any]:
        """OpenClaw's `standing-grant` scope line of an approval a cron run raises."""
        scope: dict[str, Any] = {
            "kind": "standing-grant",
            "automation": (source.job_name or source.job_id)[:128],
            "command": command[:256],
        }
        days = self.default_expiry_days
        if days is not None:
            scope["expiresInDays"] = days
        return scope

    async def use(self, source: CronRunSource, binding: str) -> GrantUse:
        """Whether a grant lets this exec of `source`'s run go without a prompt, counting
        the use when it does (`consumed`). A checkpoint; raises `StoreError`."""
        grant = await self._store.lookup(source.agent_id, source.job_id, binding)
        now = self._now_ms()
        if grant is None:
            return "no-grant"
        if grant.revoked_at_ms is not None:
            return "revoked"
        if grant.expires_at_ms is not None and grant.expires_at_ms <= now:
            return "expired"
        if grant.job_revision != source.revision:
            return "job-revision-changed"
        current = source.current()
        if current is None:
            return "job-missing"
        if current != grant.job_revision:
            return "job-revision-changed"
        minted = await self._store.find(grant.minted_by)
        if minted is None or minted.get("decision") != "allow-always":
            return "approval-not-allow-always"
        if not await self._store.consume(grant.grant_id, now):
            return "no-grant"  # revoked or expired a moment ago
        return "consumed"

    async def mint(
        self, approval_id: str, source: CronRunSource, binding: str, expires_in_days: int | None
    ) -> str | None:
        """A grant for `source`'s job and `binding`, minted by `approval_id`'s allow-always;
        None when the job was deleted or edited since the run fired. A checkpoint."""
        if source.current() != source.revision:
            await trio.lowlevel.checkpoint()
            return None
        days = expires_in_days if expires_in_days is not None else self.default_expiry_days
        now = self._now_ms()
        return await self._store.mint(
            minted_by=approval_id,
            agent_id=source.agent_id,
            cron_job_id=source.job_id,
            job_revision=source.revision,
            binding=binding,
            now_ms=now,
            expires_at_ms=None if days is None else now + days * DAY_MS,
        )

    async def job_changed(self, job_id: str) -> None:
        """The job's definition changed: its grants never match again. A checkpoint."""
        await self._store.void_job(job_id)

    async def view(self, limit: int) -> list[dict[str, Any]]:
        """`exec.approval.grants.list`'s grants (`ExecApprovalStandingGrant`). A
        checkpoint."""
        out = []
        for grant in await self._store.grants(limit):
            command, cwd = _operation(grant.binding)
            name = self.job_names(grant.cron_job_id)
            out.append(
                {
                    "grantId": grant.grant_id,
                    "mintedByApprovalId": grant.minted_by,
                    "agentId": grant.agent_id,
                    "cronJobId": grant.cron_job_id,
                    "cronJobName": name[:200] if name else None,
                    "command": (command or "(unreadable)")[:512],
                    "cwd": cwd[:512] if cwd else None,
                    "createdAtMs": grant.created_at_ms,
                    "expiresAtMs": grant.expires_at_ms,
                    "revokedAtMs": grant.revoked_at_ms,
                    "revokedBy": grant.revoked_by[:200] if grant.revoked_by else None,
                    "lastUsedAtMs": grant.last_used_at_ms,
                    "useCount": grant.use_count,
                }
            )
        return out

    async def revoke(self, grant_id: str, revoked_by: str) -> str:
        """`revoked`, `already-revoked` or `not-found`. A checkpoint."""
        return await self._store.revoke(grant_id, revoked_by=revoked_by, now_ms=self._now_ms())
