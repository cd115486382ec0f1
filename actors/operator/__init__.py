"""What a run shows its operators and waits on them for: the questions an agent asks
(`ask_user`, `question.*`) and the sessions' progress cards (`progress_card`,
`progressCard.*`).

- `Questions`: the gateway's registry of questions, and the runs' `runtime.tools.QuestionDesk`:
  `open` raises one and tells the operators holding `operator.questions`
  (`question.requested`); `ask` is a run's question, waited on to its end; `resolve` /
  `cancel` are an operator's answer (first wins; `question.resolved` tells them all);
  `wait`, `settle`, `get`, `pending`; `run` is the task that expires them; `statistics()`.
- `Question`: one question and its wire views (`record`, `wait_result`, `resolved_event`).
- `ProgressCards`: each session's card (`get`, `put`: replaced whole, `progressCard.changed`
  to the operators holding `operator.read`), and the runs' `runtime.tools.CardDesk`; its
  rules and bounds: `_cards`' docstring.
- In a cluster the questions and the cards are joined to the other nodes by the node's
  `transports.cluster` side: `Questions.peers` (`actors.approvals.DeskPeers`, as the approvals'),
  `ProgressCards.peers` (`CardPeers`).
- `operator_desks` makes a gateway's plugin approvals, questions and progress cards and
  hands them to its runs; `run_desks` is the task that expires the first two.

How one ends, who is told, the answer checks and the bounds: `_questions`' docstring.

Errors (under `ActorError`): `QuestionError` (`reason`: OpenClaw's code, `QUESTION_NOT_FOUND`,
`QUESTION_ALREADY_TERMINAL`, `QUESTION_ID_IN_USE`, `QUESTION_INVALID_ANSWER`),
`QuestionsFull` (too many pending).
"""

from ._cards import MAX_CARDS as MAX_CARDS
from ._cards import CardPeers as CardPeers
from ._cards import ProgressCards as ProgressCards
from ._desks import operator_desks as operator_desks
from ._desks import run_desks as run_desks
from ._questions import MAX_PENDING as MAX_PENDING
from ._questions import QUESTIONS_SCOPE as QUESTIONS_SCOPE
from ._questions import Question as Question
from ._questions import QuestionError as QuestionError
from ._questions import Questions as Questions
from ._questions import QuestionsFull as QuestionsFull
from ._questions import QuestionStatistics as QuestionStatistics

__all__ = [
    "MAX_CARDS",
    "MAX_PENDING",
    "QUESTIONS_SCOPE",
    "CardPeers",
    "ProgressCards",
    "Question",
    "QuestionError",
    "QuestionStatistics",
    "Questions",
    "QuestionsFull",
    "operator_desks",
    "run_desks",
]
