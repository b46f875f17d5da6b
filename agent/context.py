"""What a node needs that is not graph state: handles to the outside world, passed as the
LangGraph runtime *context* so that state stays JSON-plain and checkpoints stay small.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agent.brain import Brain
from agent.journal import Journal
from agent.models import Campaign
from policies.engine import PolicyEngine
from policies.schema import Policy
from tools.artifacts import ArtifactStore
from tools.transport import Transport


@dataclass
class RunContext:
    session: str
    campaign: Campaign
    campaign_dir: Path
    transport: Transport
    artifacts: ArtifactStore
    journal: Journal
    policy: Policy
    engine: PolicyEngine
    brain: Brain
    headless: bool = True
    variables: dict[str, str] = field(default_factory=dict)
