"""The transports a campaign's hosts may name are one registry (agent/run/connect.py: TRANSPORTS): every name a host
may give has a transport, each is built once, on first use, and closed with the session."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import get_args

from agent.run.connect import TRANSPORTS, HostRouter, Wiring
from tools.artifacts import ArtifactStore
from tools.mock_transport import MockTransport
from tools.transport import Host, LocalTransport, Transport, TransportName


def wiring(tmp_path: Path) -> Wiring:
    return Wiring(
        artifacts=ArtifactStore(tmp_path / "artifacts"),
        redact=str,
        hosts_root=tmp_path / "hosts",
        hosts=[],
        campaign_dir=tmp_path,
        pinned=tmp_path / "pinned",
        accept_new=False,
        on_pin=lambda *_: None,
        session="s1",
        ssh_config=None,
    )


def test_every_name_a_host_may_give_has_a_transport() -> None:
    assert set(TRANSPORTS) == set(get_args(TransportName))


def test_each_transport_is_built_once_on_first_use_and_closed_with_the_session(tmp_path: Path) -> None:
    built: list[str] = []
    made: dict[str, MockTransport] = {}

    def factory(name: str):
        def build(_: Wiring) -> Transport:
            time.sleep(0.05)  # slow enough for every thread below to ask before the first build ends
            built.append(name)
            made[name] = MockTransport(lambda r: f"{name}:{r.command}")
            return made[name]

        return build

    router = HostRouter(wiring(tmp_path), {"local": factory("local"), "ssh": factory("ssh")})
    assert built == []  # nothing built before a host needs it (paramiko loads only for SSH hosts)
    remote = Host(name="gpu-a", transport="ssh", address="127.0.0.1")
    outputs: list[str] = []
    threads = [
        threading.Thread(target=lambda: outputs.append(router.run(remote, "true", timeout=5).stdout_tail))
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert built == ["ssh"] and outputs == ["ssh:true"] * 8  # eight hosts' commands at once: one transport
    assert router.run(Host(name="here"), "echo", timeout=5).stdout_tail == "local:echo" and built == ["ssh", "local"]
    assert [r.host.name for r in made["ssh"].requests] == ["gpu-a"] * 8
    router.close()
    assert made["ssh"].closed and made["local"].closed


def test_the_local_transport_is_the_real_one(tmp_path: Path) -> None:
    router = HostRouter(wiring(tmp_path))
    result = router.run(Host(name="here"), "echo hi", timeout=10)
    assert result.ok and result.stdout_tail == "hi\n" and isinstance(router.built["local"], LocalTransport)
    assert "ssh" not in router.built
    router.close()
