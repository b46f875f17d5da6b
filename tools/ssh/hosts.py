"""Where an SSH host is and whom to trust there: a host resolved as `ssh -G` would (aliases, user, port, keys,
ProxyJump), and the known host keys, strict unless the operator opted into trust-on-first-use."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from tools.transport import (
    Host,
    TransportError,
)


class HostKeyError(TransportError):
    """Unknown or changed host key: never connected, never retried."""


@dataclass
class Endpoint:
    """Where and how to reach one host, after ~/.ssh/config resolution."""

    name: str
    address: str
    port: int = 22
    user: str | None = None
    key_paths: list[str] = field(default_factory=list)
    use_agent: bool = False
    passphrase: str | None = None
    proxy_jump: Endpoint | None = None

    @property
    def known_hosts_name(self) -> str:
        return self.address if self.port == 22 else f"[{self.address}]:{self.port}"

    def label(self) -> str:
        return f"{self.name} ({self.user + '@' if self.user else ''}{self.address}:{self.port})"


def resolve(host: Host, *, environ: Mapping[str, str] | None = None, ssh_config: str | None = None) -> Endpoint:
    """Inventory fields win; anything missing comes from `ssh -G` (OpenSSH semantics, Include and all),
    or from paramiko's SSHConfig when no OpenSSH client is installed."""
    env = os.environ if environ is None else environ
    alias = host.address or host.name
    cfg = _ssh_config(alias, ssh_config)
    address = cfg.get("hostname") or alias
    port = host.port if host.port != 22 or "port" not in cfg else int(cfg["port"])
    user = host.user or cfg.get("user")
    keys = (
        [host.key_path]
        if host.key_path
        else [p for p in _as_list(cfg.get("identityfile")) if Path(os.path.expanduser(p)).exists()]
    )
    passphrase = env.get(host.passphrase_env) if host.passphrase_env else None
    jump = host.proxy_jump or (cfg.get("proxyjump") if cfg.get("proxyjump", "none") != "none" else None)
    endpoint = Endpoint(
        name=host.name,
        address=address,
        port=port,
        user=user,
        key_paths=[os.path.expanduser(k) for k in keys],
        use_agent=host.use_agent,
        passphrase=passphrase,
    )
    if jump:
        first = jump.split(",")[0]
        juser, _, jhost = first.rpartition("@")
        jhost, _, jport = jhost.partition(":")
        jump_host = Host(
            name=f"{host.name}-jump",
            transport="ssh",
            address=jhost,
            user=juser or None,
            port=int(jport) if jport else 22,
            use_agent=host.use_agent,
            key_path=host.key_path,
        )
        endpoint.proxy_jump = resolve(jump_host, environ=env, ssh_config=ssh_config)
    return endpoint


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return cast(list[str], value) if isinstance(value, list) else [value]


def _ssh_config(alias: str, config_file: str | None = None) -> dict[str, Any]:
    ssh = shutil.which("ssh")
    if ssh:
        argv = [ssh, *(["-F", config_file] if config_file else []), "-G", "--", alias]
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=5, check=True).stdout
        except (subprocess.SubprocessError, OSError):
            out = ""
        cfg: dict[str, Any] = {}
        for line in out.splitlines():
            key, _, value = line.partition(" ")
            if key == "identityfile":
                cfg.setdefault(key, []).append(value)
            else:
                cfg[key] = value
        if cfg:
            # `ssh -G` reports defaults too; an IdentityFile list of defaults is filtered for existence later.
            return cfg
    import paramiko

    path = Path(config_file or "~/.ssh/config").expanduser()
    if not path.exists():
        return {}
    return dict(paramiko.SSHConfig.from_path(str(path)).lookup(alias))


def user_known_hosts(alias: str, config_file: str | None = None) -> list[Path]:
    """The known_hosts files OpenSSH would use for `alias` (UserKnownHostsFile)."""
    value = _ssh_config(alias, config_file).get("userknownhostsfile", "")
    return [Path(os.path.expanduser(p)) for p in str(value).split() if p]


class KnownHosts:
    """Host keys from ~/.ssh/known_hosts, per-campaign files, and this session's pinned keys.

    paramiko raises on `@cert-authority`/`@revoked` lines for the whole file, so such lines are
    filtered out (with a warning) before parsing: a CA line must not disable host-key checking.
    """

    def __init__(
        self,
        files: list[Path],
        pinned: Path | None,
        *,
        accept_new: bool = False,
        on_pin: Callable[[str, str, str], None] | None = None,
    ) -> None:
        import paramiko

        self.keys = paramiko.HostKeys()
        self.warnings: list[str] = []
        for path in [*files, *([pinned] if pinned else [])]:
            self._load(path)
        self.pinned = pinned
        self.accept_new = accept_new
        self.on_pin = on_pin
        self._lock = threading.Lock()

    def _load(self, path: Path) -> None:
        import paramiko
        from paramiko.hostkeys import HostKeyEntry

        if not path.exists():
            return
        kept: list[str] = []
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if line.lstrip().startswith(("@cert-authority", "@revoked")):
                self.warnings.append(f"{path}:{number}: {line.split()[0]} lines are not supported; ignored")
                continue
            kept.append(line)
        for line in kept:
            try:
                entry = HostKeyEntry.from_line(line)
            except (paramiko.SSHException, ValueError, IndexError):
                continue
            if entry is not None:
                for name in entry.hostnames:
                    self.keys.add(name, entry.key.get_name(), entry.key)

    def policy(self) -> Any:
        import paramiko

        store = self

        class Policy(paramiko.MissingHostKeyPolicy):
            def missing_host_key(self, client: Any, hostname: str, key: Any) -> None:
                if not store.accept_new:
                    raise HostKeyError(
                        f"host key for {hostname} is unknown ({key.get_name()} {key.fingerprint}); add it to "
                        f"known_hosts after checking it (ssh-keyscan), or pass --accept-new-host-keys to pin it"
                    )
                store.pin(hostname, key)

        return Policy()

    def pin(self, hostname: str, key: Any) -> None:
        with self._lock:
            self.keys.add(hostname, key.get_name(), key)
            if self.pinned is not None:
                self.pinned.parent.mkdir(parents=True, exist_ok=True)
                with self.pinned.open("a") as fh:
                    fh.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
        if self.on_pin is not None:
            self.on_pin(hostname, key.get_name(), key.fingerprint)
