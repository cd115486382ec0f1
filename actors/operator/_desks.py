"""The gateway's desks where runs meet its operators, made and kept together: the plugin
approvals (`actors.approvals`), the questions (`_questions`) and the progress cards
(`_cards`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import trio

from runtime.agent import TurnServices

from ..approvals import Approver, PluginApprovals
from ..runs import EventHub
from ._cards import ProgressCards
from ._questions import Questions

__all__ = ["operator_desks", "run_desks"]


class _Host(Protocol):
    @property
    def hub(self) -> EventHub: ...

    @property
    def services(self) -> TurnServices: ...


def operator_desks(
    supervisor: _Host, connections: Mapping[str, Approver]
) -> tuple[PluginApprovals, Questions, ProgressCards]:
    """The plugin approvals, the questions and the progress cards of a gateway whose
    connections are `connections`; the supervisor's runs reach them through its services
    (`approvals`, `questions`, `cards`). The plugin approvals record their ended ones
    where the exec approvals do, when those were made first. Not a checkpoint."""
    records = getattr(supervisor.services.exec_approver, "records", None)
    approvals = PluginApprovals(supervisor.hub, connections, records=records)
    questions = Questions(supervisor.hub, connections)
    cards = ProgressCards(supervisor.hub, connections)
    supervisor.services.approvals = approvals
    supervisor.services.questions = questions
    supervisor.services.cards = cards
    return approvals, questions, cards


async def run_desks(approvals: PluginApprovals, questions: Questions) -> None:
    """Expire the approvals and the questions no one waits on, for the gateway's lifetime.
    Never returns; cancel it to stop."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(approvals.run)
        nursery.start_soon(questions.run)
