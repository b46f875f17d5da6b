"""What a run is made of, built from a session's own copies: its campaign and policy, the secrets and the
redactor that keeps them out of every record, the host transports (local, and SSH on first use), the
brain, and the `RunContext` that hands them to the graph's nodes.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from agent.brain import Brain
from agent.brain.rules import RuleBrain
from agent.campaign import LoadedCampaign, load_campaign
from agent.context import RunContext
from agent.models import Campaign
from agent.run.connect import HostRouter, Wiring
from agent.run.documents import ssh_config_file
from agent.store.base import JournalWriter, Session
from policies.engine import PolicyEngine
from policies.load import load_policy_text
from policies.schema import Policy
from tools.artifacts import ArtifactStore
from tools.secrets import Redactor, is_secret_name


def session_documents(d: Session, meta: dict[str, Any], campaign_dir: Path) -> tuple[LoadedCampaign, Policy]:
    """The campaign and the policy the session runs under: its own copies, the campaign read as if it sat
    where the campaign's files are (relative paths stay valid)."""
    path = campaign_dir / Path(meta["campaign"]).name
    loaded = load_campaign(path, text=d.read("campaign.yaml") or "")
    return loaded, load_policy_text(d.read("policy.yaml") or "", path=meta["policy"])


def run_context(
    d: Session,
    meta: dict[str, Any],
    loaded: LoadedCampaign,
    policy: Policy,
    *,
    campaign_dir: Path,
    journal: JournalWriter,
    headless: bool,
    on_pin: Callable[[str, str, str], None],
) -> tuple[RunContext, HostRouter]:
    """The context the nodes run with (a rule brain until `brain_for` gives the session's), and the
    transports it holds, which the caller closes."""
    artifacts = ArtifactStore(d.artifacts)
    campaign = loaded.campaign
    secrets = {name: os.environ.get(name, "") for name in campaign.secrets}
    secrets |= {k: v for k, v in campaign.vars.items() if is_secret_name(k)}
    redact = Redactor.from_environment()
    redact.add(*secrets.values())
    redact.add(*(os.environ.get(h.passphrase_env, "") for h in campaign.hosts if h.passphrase_env))
    transport = HostRouter(
        Wiring(
            artifacts=artifacts,
            redact=redact,
            hosts_root=d.hosts,
            hosts=campaign.hosts,
            campaign_dir=campaign_dir,
            pinned=d.pinned,
            accept_new=bool(meta.get("accept_new_host_keys")),
            on_pin=on_pin,
            session=d.id,
            ssh_config=ssh_config_file(d),
        )
    )
    ctx = RunContext(
        session=d.id,
        campaign=campaign,
        campaign_dir=campaign_dir,
        transport=transport,
        artifacts=artifacts,
        journal=journal,
        policy=policy,
        engine=PolicyEngine(policy),
        brain=RuleBrain(),
        headless=headless,
        secrets=secrets,
        redact=redact,
        started_at=datetime.fromisoformat(meta["created"]).timestamp(),
        live_dir=d.work / "live",
    )
    return ctx, transport


def brain_for(meta: dict[str, Any], campaign: Campaign, ctx: RunContext, *, on_cost: Callable[[float], None]) -> Brain:
    """The brain the session was created with (meta.json's `brain`): rules, or Claude with the
    campaign's brain settings (its own copy, before any proposals) and the chosen model."""
    chosen: dict[str, Any] = meta.get("brain") or {"kind": "rules"}
    if chosen["kind"] != "claude":
        return RuleBrain()
    from agent.brain.claude import ClaudeBrain

    spec = campaign.brain.model_copy(update={"kind": "claude", "model": chosen["model"]})
    return ClaudeBrain(
        spec,
        campaign=campaign,
        journal=ctx.journal,
        api_key=os.environ.get("ANTHROPIC_API_KEY", ""),
        auth_token=os.environ.get("ANTHROPIC_AUTH_TOKEN", ""),
        max_output=(chosen.get("checked") or {}).get("max_tokens"),
        on_cost=on_cost,
        over_budget=ctx.over_llm_budget,
        redact=ctx.redact,
    )
