"""A throwaway OpenSSH sshd on 127.0.0.1 for tests (research/ssh.md §1).

Its own host key, client key, authorized_keys and known_hosts in a private temp dir; key auth only,
no PAM; sshd defaults for MaxSessions/MaxStartups so tests meet production limits. As root, commands
run as a dedicated user whose shell is /bin/sh (root's bash would source ~/.bashrc on every command).
Stopped by PID, together with every session process it spawned.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tools.transport import Host

SSHD = Path("/usr/sbin/sshd")
TEST_USER = "signoff-ssh"


class SSHDUnavailable(RuntimeError):
    pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ensure_user() -> tuple[str, Path]:
    if os.geteuid() != 0:
        me = pwd.getpwuid(os.getuid())
        return me.pw_name, Path(me.pw_dir)
    try:
        entry = pwd.getpwnam(TEST_USER)
    except KeyError:
        subprocess.run(["useradd", "-m", "-s", "/bin/sh", TEST_USER], check=True, capture_output=True)
        entry = pwd.getpwnam(TEST_USER)
    # useradd leaves the password "!", which with UsePAM no means "locked", even for key logins.
    subprocess.run(["usermod", "-p", "*", TEST_USER], check=True, capture_output=True)
    return TEST_USER, Path(entry.pw_dir)


def keygen(path: Path, comment: str, passphrase: str = "") -> str:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", comment, "-f", str(path)],
        check=True,
        capture_output=True,
    )
    return Path(f"{path}.pub").read_text().split()[1]


@dataclass
class SSHServer:
    root: Path
    port: int
    proc: subprocess.Popen[bytes]
    user: str
    home: Path
    client_key: Path
    known_hosts: Path
    host_key_b64: str

    def host(self, name: str = "srv", **extra: object) -> Host:
        fields: dict[str, object] = {
            "name": name,
            "transport": "ssh",
            "address": "127.0.0.1",
            "port": self.port,
            "user": self.user,
            "key_path": str(self.client_key),
            "known_hosts": str(self.known_hosts),
        }
        return Host.model_validate({**fields, **extra})

    def processes(self, pattern: str) -> list[str]:
        out = subprocess.run(["pgrep", "-u", self.user, "-f", pattern], capture_output=True, text=True)
        return [p for p in out.stdout.split() if p]

    def stop(self) -> None:
        children = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True).stdout.split()
        for pid in [str(self.proc.pid), *children]:
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGTERM)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        # Session processes setsid() away from the listener: end whatever still runs as the test user.
        if self.user == TEST_USER:
            subprocess.run(["pkill", "-KILL", "-u", self.user], capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)


def start(*, host_key: Path | None = None, extra_config: str = "", port: int | None = None) -> SSHServer:
    if not SSHD.exists() or not shutil.which("ssh-keygen"):
        raise SSHDUnavailable("OpenSSH sshd is not installed (make test installs openssh-server as root)")
    user, home = ensure_user()
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation dir, no systemd here
    root = Path(tempfile.mkdtemp(prefix="signoff-sshd-"))
    root.chmod(0o711)  # sshd reads authorized_keys as the target user
    if host_key is None:
        host_key = root / "host_ed25519"
        keygen(host_key, "signoff-test-host")
    client_key = root / "client_ed25519"
    keygen(client_key, "signoff-test-client")
    authorized = root / "authorized_keys"
    shutil.copyfile(str(client_key) + ".pub", authorized)
    authorized.chmod(0o644)
    host_key_b64 = Path(str(host_key) + ".pub").read_text().split()[1]
    for attempt in range(5):
        chosen = port or _free_port()
        config = root / "sshd_config"
        config.write_text(f"""\
Port {chosen}
ListenAddress 127.0.0.1
HostKey {host_key}
PidFile {root}/sshd.pid
AuthorizedKeysFile {authorized}
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
PermitRootLogin prohibit-password
LogLevel VERBOSE
Subsystem sftp internal-sftp
{extra_config}
""")
        proc = subprocess.Popen(
            [str(SSHD), "-D", "-f", str(config), "-E", str(root / "sshd.log")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", chosen), timeout=1) as s:
                    if s.recv(4).startswith(b"SSH-"):
                        break
            except OSError:
                time.sleep(0.05)
        if proc.poll() is None:
            known = root / "known_hosts"
            known.write_text(f"[127.0.0.1]:{chosen} ssh-ed25519 {host_key_b64}\n")
            return SSHServer(
                root=root,
                port=chosen,
                proc=proc,
                user=user,
                home=home,
                client_key=client_key,
                known_hosts=known,
                host_key_b64=host_key_b64,
            )
        if port is not None or attempt == 4:
            log = (root / "sshd.log").read_text(errors="replace") if (root / "sshd.log").exists() else ""
            shutil.rmtree(root, ignore_errors=True)
            raise SSHDUnavailable(f"sshd did not start: {log.strip()[-300:]}")
    raise SSHDUnavailable("sshd did not start")
