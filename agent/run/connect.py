"""One `Transport` for a campaign: each host's commands go to the local or the SSH transport.

paramiko is imported only when a campaign has SSH hosts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tools.artifacts import ArtifactStore
from tools.output import LineCallback
from tools.transport import CommandResult, Host, LocalTransport, Transport


class HostRouter:
    def __init__(self, local: LocalTransport, ssh_factory: Callable[[], Transport]) -> None:
        self.local = local
        self._ssh_factory = ssh_factory
        self._ssh: Transport | None = None

    def _for(self, host: Host) -> Transport:
        if host.transport == "local":
            return self.local
        if self._ssh is None:
            self._ssh = self._ssh_factory()
        return self._ssh

    def run(
        self,
        host: Host,
        command: str,
        *,
        timeout: float,
        on_line: LineCallback | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stdin: bytes | None = None,
        on_timeout: Callable[[], None] | None = None,
    ) -> CommandResult:
        return self._for(host).run(
            host, command, timeout=timeout, on_line=on_line, env=env, cwd=cwd, stdin=stdin, on_timeout=on_timeout
        )

    def workdir(self, host: Host) -> str:
        return self._for(host).workdir(host)

    def put(self, host: Host, local: Path, remote: str) -> None:
        self._for(host).put(host, local, remote)

    def close(self) -> None:
        self.local.close()
        if self._ssh is not None:
            self._ssh.close()


def ssh_factory(
    *,
    artifacts: ArtifactStore,
    hosts: list[Host],
    campaign_dir: Path,
    pinned: Path,
    accept_new: bool,
    on_pin: Callable[[str, str, str], None],
    redact: Callable[[str], str],
    session: str,
    ssh_config: str | None,
) -> Callable[[], Any]:
    def build() -> Any:
        from tools.ssh import KnownHosts, SSHTransport, user_known_hosts

        files = [Path("~/.ssh/known_hosts").expanduser()]
        for host in hosts:
            if host.known_hosts:
                p = Path(host.known_hosts).expanduser()
                files.append(p if p.is_absolute() else campaign_dir / p)
            if host.transport == "ssh":
                files += user_known_hosts(host.address or host.name, ssh_config)
        known = KnownHosts(list(dict.fromkeys(files)), pinned, accept_new=accept_new, on_pin=on_pin)
        return SSHTransport(artifacts, known, redact=redact, session=session, ssh_config=ssh_config)

    return build
