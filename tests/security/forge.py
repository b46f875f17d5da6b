"""What someone who can write a session's store makes of its journal, without any key: lines rewritten with
the chain recomputed, a line chained onto the end, a policy that allows everything. Shared by the tests
that reproduce issue 32's attacks on the file journal and on the team store."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import rfc8785

from agent.journal.chain import GENESIS
from tests.conftest import DEMO, fast

ROOT = Path(__file__).resolve().parents[2]
PRESETS = ROOT / "policies" / "presets"
TOUCH = '{{run: "touch {marker}", on: decode}}, '


def rechain(lines: list[bytes], edit: Callable[[dict[str, Any]], None]) -> list[bytes]:
    """Every line passed through `edit` (in place), and every `prev` recomputed from the first."""
    prev, out = GENESIS, []
    for line in lines:
        record = json.loads(line)
        edit(record)
        record["prev"] = prev
        out.append(rfc8785.dumps(record))
        prev = hashlib.sha256(out[-1]).hexdigest()
    return out


def readings_at_500(record: dict[str, Any]) -> None:
    if record["kind"] == "bench.run" and record.get("value") is not None:
        record["value"] = 500.0


def chained(last: bytes, kind: str, **fields: Any) -> bytes:
    """A line that extends the chain after `last`: what the journal itself would write, bar the timestamp."""
    before = json.loads(last)
    record = {
        "v": 1,
        "seq": before["seq"] + 1,
        "ts": before["ts"],
        "session": before["session"],
        "kind": kind,
        "actor": "human:alice",
        "prev": hashlib.sha256(last).hexdigest(),
        **fields,
    }
    return rfc8785.dumps(record)


def guarded_policy(path: Path) -> Path:
    """ask-everything, but `touch` is denied: the session's own policy in these attacks."""
    text = (PRESETS / "ask-everything.yaml").read_text().replace("name: ask-everything", "name: no-touching")
    path.write_text(text.replace('deny: ["rm -rf /*"', 'deny: ["touch *", "rm -rf /*"', 1))
    return path


def allow_everything() -> str:
    """The policy an attacker appends: the autonomous preset with every command allowed."""
    text = (PRESETS / "autonomous.yaml").read_text().replace("name: autonomous", "name: allow-everything")
    lines = text.splitlines()
    out = []
    for line in lines:
        if line.startswith("  deny:"):
            out.append("  deny: []")
        elif line.startswith("  allow:"):
            out.append('  allow: ["*"]')
        elif line.startswith("  ask:"):
            out.append("  ask: []")
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def touching_campaign(marker: Path) -> str:
    """The fast demo with a `touch MARKER` first in option #2's apply: a command the session's policy denies."""
    text = fast(DEMO.read_text())
    before = '{run: "{{simserve}} apply overlap-scheduler", on: decode}'
    assert before in text
    return text.replace(before, TOUCH.format(marker=marker) + before)


def policy_change(last: bytes, text: str, *, previous: str, path: str) -> bytes:
    """A `policy.changed` line adopting `text`, chained after `last` (as `--accept-policy-change` writes it)."""
    sha = hashlib.sha256(text.encode()).hexdigest()
    return chained(
        last,
        "policy.changed",
        by="human:alice",
        policy=path,
        policy_name="allow-everything",
        policy_text=text,
        policy_sha256=sha,
        previous_sha256=previous,
    )
