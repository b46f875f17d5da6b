"""Making a session: validate the campaign and the policy first (nothing is created for a bad file),
choose its brain, then lay it out in a store with its own copies of both documents and of the files
the campaign names. `RunOptions` is how to start a run, passed whole from the command line down.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent.campaign import load_campaign, refuse_literal_secrets
from agent.errors import SessionError
from agent.journal.head import Signer
from agent.models import BrainSpec
from agent.run.documents import CAMPAIGN_FILES, SSH_CONFIG, campaign_files
from agent.store import open_store
from agent.store.base import Session, Store, owner
from policies.load import load_policy
from policies.schema import Policy
from policies.yamlsrc import SourceError


@dataclass(frozen=True)
class RunOptions:
    """How to start a run: everything `signoff run` and `signoff demo` take besides the campaign file."""

    policy: str | Path = "cautious"  # a policy file, or a preset name
    demo: bool = False  # the built-in demo campaign (recorded in meta.json)
    accept_new_host_keys: bool = False  # trust-on-first-use: pin unknown SSH host keys (journaled)
    ssh_config: str | None = None  # an ssh_config file to resolve SSH hosts with
    campaign_text: str | None = None  # the campaign as text, when it is not the file's (`demo --ssh`)
    brain: str | None = None  # rules or claude; None: the campaign's brain.kind, then the policy's, then rules
    model: str | None = None  # the Claude model for the claude brain
    store: str | None = None  # where sessions live: postgresql://…; None: $SIGNOFF_STORE, else the local store
    headless: bool = True  # no TUI: the policy decides, `ask` pauses
    as_json: bool = False  # print one JSON summary object on stdout
    fail_on: tuple[str, ...] = ()  # ask, default, deadline (as given, comma lists too): exit 4 if a gate was decided so
    wait: bool = False  # at a gate that needs a person, wait for the answer instead of exiting 3


MAX_SSH_CONFIG = 1 << 20  # an ssh_config is a few KB; the session keeps a copy, so a bound on what it reads


def new_session_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def _new_session(store: Store) -> Session:
    """A session under a fresh id; an id already taken (the same second and 16 random bits, or a name
    someone planted in a shared store) is passed over, never written into."""
    for _ in range(20):
        try:
            return store.new(new_session_id())
        except FileExistsError:
            continue
    raise SessionError(f"could not create a new session in {store.where}: every id tried was taken")


def create(campaign_path: Path, options: RunOptions | str | Path, *, store: Store | None = None) -> Session:
    """Validate everything first (nothing is created for a bad file), then lay out the session. A policy
    file or preset name in place of `options` is short for `RunOptions(policy=...)`; `store` is an open
    store (default: the one `options.store` names)."""
    if not isinstance(options, RunOptions):
        options = RunOptions(policy=options)
    loaded = load_campaign(campaign_path, text=options.campaign_text)
    refuse_literal_secrets(loaded)
    policy = load_policy(options.policy)
    missing = [name for name in loaded.campaign.secrets if not os.environ.get(name)]
    if missing:
        raise SourceError(loaded.path, None, f"the campaign needs secret(s) {', '.join(missing)} in the environment")
    try:
        Signer.from_environment()  # a signing key that cannot be used is refused before anything starts
    except ValueError as exc:
        raise SourceError("SIGNOFF_SIGNING_KEY", None, str(exc)) from None
    ssh_config = _ssh_config_text(options.ssh_config)
    chosen: dict[str, Any] = choose_brain(loaded.campaign.brain, policy, options.brain, options.model)
    if chosen["kind"] == "claude":
        from agent.brain.preflight import Credentials, check_model

        credentials = Credentials.from_environment()
        if not credentials.present:
            raise SourceError(
                loaded.path,
                None,
                "the claude brain needs ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN in the environment "
                "(or use --brain rules)",
            )
        # The key, the model and its limits, checked before anything is made or run (BrainUnavailable: one line).
        spec = loaded.campaign.brain.model_copy(update={"model": chosen["model"]})
        chosen = {**chosen, "checked": check_model(spec, credentials).model_dump(exclude_none=True)}
    d = _new_session(store or open_store(options.store))
    d.write("campaign.yaml", loaded.text)
    d.write("policy.yaml", policy.text)
    files = campaign_files(loaded)
    if files:
        d.write(CAMPAIGN_FILES, json.dumps(files, indent=1, sort_keys=True))
    if ssh_config is not None:
        d.write(SSH_CONFIG, ssh_config)  # resumes resolve hosts with this copy, which the journal vouches for
    d.write_meta(
        {
            "id": d.id,
            "campaign": str(loaded.path),
            "campaign_dir": str(loaded.directory),
            "campaign_name": loaded.campaign.name,
            "campaign_sha256": hashlib.sha256(loaded.text.encode()).hexdigest(),
            "policy": str(policy.path),
            "policy_name": policy.name,
            "policy_sha256": policy.sha256,
            **({"policy_parts": [p.model_dump() for p in policy.parts]} if len(policy.parts) > 1 else {}),
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "demo": options.demo,
            "accept_new_host_keys": options.accept_new_host_keys,
            "ssh_config": options.ssh_config,
            "brain": chosen,
            "status": "created",
            "owner": owner(),
        }
    )
    return d


def _ssh_config_text(name: str | None) -> str | None:
    """The text of `--ssh-config FILE`, which the session keeps (SourceError for one it cannot use)."""
    if not name:
        return None
    path = Path(name).expanduser()
    try:
        if not path.is_file():
            raise SourceError("--ssh-config", None, f"{name}: not a file")
        with path.open("rb") as fh:
            data = fh.read(MAX_SSH_CONFIG + 1)
        if len(data) > MAX_SSH_CONFIG:
            raise SourceError("--ssh-config", None, f"{name}: larger than {MAX_SSH_CONFIG >> 20} MiB")
        return data.decode()
    except OSError as exc:
        raise SourceError("--ssh-config", None, f"{name}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise SourceError("--ssh-config", None, f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def choose_brain(spec: BrainSpec, policy: Policy, kind: str | None, model: str | None) -> dict[str, str]:
    """`--brain` beats the campaign's `brain.kind`, which beats the policy's `brain`; rules otherwise."""
    chosen = kind or (spec.kind if "kind" in spec.model_fields_set else None) or policy.model.brain or "rules"
    if chosen not in ("rules", "claude"):
        raise SourceError("--brain", None, f"unknown brain {chosen!r}: use rules or claude")
    return {"kind": chosen, "model": model or spec.model}


def demo_campaign(*, sweep: bool = False) -> Path:
    """The built-in demo's campaign; `sweep`: the same options measured as a load sweep under an SLO."""
    name = "sweep.yaml" if sweep else "campaign.yaml"
    path = Path(__file__).resolve().parents[2] / "examples" / "decode-campaign" / name
    if not path.exists():
        raise SessionError(f"the demo campaign is missing ({path}); run from a signoff checkout")
    return path


def demo_over_ssh(campaign: Path, target: str) -> str:
    """The demo campaign with its hosts on one SSH host (`HOST[:PORT]`, an address or ssh_config alias)."""
    import yaml

    from policies.yamlsrc import YamlSource

    host, _, port = target.rpartition(":") if target.count(":") == 1 else (target, "", "")
    if not host or (port and not port.isdigit()):
        raise ValueError(f"--ssh takes HOST or HOST:PORT, not {target!r}")
    data = YamlSource(campaign, campaign.read_text()).data
    for h in data["hosts"]:
        h.update(transport="ssh", address=host)
        if port:
            h["port"] = int(port)
    return yaml.safe_dump(data, sort_keys=False)
