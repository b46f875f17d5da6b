"""What a node needs that is not graph state: handles to the outside world, passed as the
LangGraph runtime *context* so that state stays JSON-plain and checkpoints stay small.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from agent.brain import Brain
from agent.ledger import Ledger
from agent.models import Campaign
from agent.store.base import JournalWriter
from policies.engine import PolicyEngine
from policies.schema import Policy
from tools.artifacts import ArtifactStore
from tools.transport import Host, Transport


@dataclass
class RunContext:
    session: str
    campaign: Campaign
    campaign_dir: Path
    transport: Transport
    artifacts: ArtifactStore
    journal: JournalWriter
    policy: Policy
    engine: PolicyEngine
    brain: Brain
    headless: bool = True
    secrets: dict[str, str] = field(default_factory=dict)  # name → value; never journaled
    redact: Callable[[str], str] = str
    started_at: float = 0.0  # epoch seconds when the session started (budget: wall time)
    live_dir: Path | None = None  # where running commands' output is spooled for watchers (agent/exec/live.py)
    spent_usd: float = 0.0  # LLM spend so far (RuleBrain spends nothing)
    budget_approved: set[str] = field(default_factory=set)  # limits a person or rule agreed to go past
    ledger: Ledger = field(default_factory=Ledger)  # mutations by idempotency key (agent/ledger.py)
    _slots: dict[str, threading.BoundedSemaphore] = field(default_factory=dict)
    _slots_lock: threading.Lock = field(default_factory=threading.Lock)

    @contextmanager
    def fleet_slot(self, host: Host) -> Generator[None, None, None]:
        """Wait for a turn to run a command on `host`: one slot of each of its bounded roles and one
        of the overall limit (`campaign.fleet`). Taken in one global order, so no two commands can
        each hold what the other waits for."""
        fleet = self.campaign.fleet
        names = [*sorted(r for r in set(host.roles) if r in fleet.parallel), "*"]
        with self._slots_lock:
            for name in names:
                if name not in self._slots:
                    limit = fleet.max_parallel if name == "*" else fleet.parallel[name]
                    self._slots[name] = threading.BoundedSemaphore(limit)
        with ExitStack() as stack:
            for name in names:
                self._slots[name].acquire()
                stack.callback(self._slots[name].release)
            yield

    def over_llm_budget(self) -> str | None:
        """Why the brain must not call the model now (None: it may)."""
        limit = self.policy.model.budgets.llm_usd
        if limit is None or self.spent_usd < limit or "llm_usd" in self.budget_approved:
            return None
        return f"the policy's LLM budget of ${limit:g} is spent (${self.spent_usd:.4f})"

    def secret_names(self) -> set[str]:
        return set(self.secrets)
