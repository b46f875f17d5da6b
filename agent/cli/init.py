"""`signoff init`: a commented campaign and policy to start from, built from the shipped examples, that
`signoff check` passes as written (agent/templates/, examples/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agent.cli.shared import JsonOpt, fail
from agent.errors import BAD_INPUT, FAILED

TEMPLATES = {
    "vllm": "a vLLM server on SSH GPU hosts: server flags A/B-tested at a fixed concurrency (servectl.sh)",
    "sglang": "an SGLang server on SSH GPU hosts: server flags A/B-tested at a fixed concurrency (servectl.sh)",
    "redis": "a real redis-server in the host's directory: durability vs SET throughput (examples/redis)",
    "postgres": "a real PostgreSQL in the host's directory: pgbench TPS with crash safety (examples/postgres)",
    "generic": "any service: a control script to fill in, one option, a local host",
}
HERE = Path(__file__).resolve().parents[1] / "templates"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _sources(template: str) -> dict[str, Path]:
    """The files a template writes: name in the new directory → where it comes from."""
    if template in ("redis", "postgres"):
        src = EXAMPLES / template
        if not src.is_dir():
            raise fail(
                f"the {template} template is built from {src}, which is missing; run from a signoff checkout", FAILED
            )
        return {p.name: p for p in sorted(src.iterdir()) if p.is_file() and not p.name.startswith(".")}
    files = {p.name: p for p in sorted((HERE / template).iterdir()) if p.is_file()}
    if template in ("vllm", "sglang"):
        files["servectl.sh"] = HERE / "servectl.sh"
    return files


def _schema_text(what: str) -> str:
    from agent.cli.schema import schema_of

    return json.dumps(schema_of(what), indent=2) + "\n"


def init(
    directory: Annotated[Path, typer.Argument(help="Where to write the files (created if missing).")] = Path("."),
    template: Annotated[str, typer.Option("--template", help="One of: " + ", ".join(TEMPLATES) + ".")] = "generic",
    force: Annotated[bool, typer.Option("--force", help="Overwrite files that already exist.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Write a commented campaign.yaml and policy.yaml (with the scripts they upload and JSON Schemas for
    editors) that `signoff check` passes; then fill in your hosts and commands."""
    if template not in TEMPLATES:
        raise fail(
            f"unknown template {template!r}; one of: "
            + "; ".join(f"{name} ({what})" for name, what in TEMPLATES.items()),
            BAD_INPUT,
        )
    sources = _sources(template)
    texts: dict[str, bytes] = {}
    for name, src in sources.items():
        data = src.read_bytes()
        if name in ("campaign.yaml", "policy.yaml"):
            kind = name.removesuffix(".yaml")
            head = f"# yaml-language-server: $schema=./{kind}.schema.json\n"
            if name == "campaign.yaml":
                head += f"# Written by `signoff init --template {template}`; check it with\n"
                head += "#   signoff check campaign.yaml --policy policy.yaml\n"
            data = head.encode() + data
        texts[name] = data
    texts["campaign.schema.json"] = _schema_text("campaign").encode()
    texts["policy.schema.json"] = _schema_text("policy").encode()
    existing = [name for name in texts if (directory / name).exists()]
    if existing and not force:
        raise fail(
            f"{directory / existing[0]} already exists"
            + (f" (and {len(existing) - 1} more)" if len(existing) > 1 else "")
            + "; nothing written (--force overwrites)",
            BAD_INPUT,
        )
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for name, data in texts.items():
            path = directory / name
            path.write_bytes(data)
            if name.endswith(".sh"):
                path.chmod(0o755)
    except OSError as exc:
        raise fail(f"cannot write into {directory}: {exc.strerror or exc}", BAD_INPUT) from None
    campaign, policy = directory / "campaign.yaml", directory / "policy.yaml"
    if as_json:
        typer.echo(json.dumps({"template": template, "directory": str(directory), "files": sorted(texts)}))
        return
    typer.echo(f"wrote {', '.join(sorted(texts))} in {directory} ({TEMPLATES[template]})")
    typer.echo(f"next: edit {campaign}, then  signoff check {campaign} --policy {policy}")
