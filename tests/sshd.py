"""A throwaway OpenSSH sshd on 127.0.0.1 for tests (research/ssh.md §1).

Its own host key, client key, authorized_keys and known_hosts in a private temp dir; key auth only,
no PAM; sshd defaults for MaxSessions/MaxStartups so tests meet production limits. As root, each server
gets a login user of its own (shell /bin/sh: root's bash would source ~/.bashrc on every command), so
"this server's processes" is exact: its listener's process tree plus whatever runs as its user (a command
that outlived its connection is reparented away from the tree). Stopped by those PIDs, never by a name or
a user another test shares; the user is deleted with it.
"""

from __future__ import annotations

import itertools
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests import procs
from tools.transport import Host

SSHD = Path("/usr/sbin/sshd")
USER_PREFIX = "signoff-t"  # signoff-t<pid of the test process>-<n>: one per server
_USER_NAME = re.compile(rf"^{USER_PREFIX}(\d+)-\d+$")
_numbers = itertools.count()


class SSHDUnavailable(RuntimeError):
    pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pid_alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def _retry(argv: list[str]) -> None:
    """useradd/userdel from parallel test workers can meet the passwd lock: wait for it, briefly."""
    for attempt in range(20):
        r = subprocess.run(argv, capture_output=True, text=True)
        if r.returncode == 0:
            return
        if "lock" not in r.stderr.lower() or attempt == 19:
            raise SSHDUnavailable(f"{' '.join(argv)} failed: {r.stderr.strip()}")
        time.sleep(0.1)


def _delete_stale_users() -> None:
    """Users left by a test process that was killed before it could delete them (none of theirs runs)."""
    for entry in pwd.getpwall():
        m = _USER_NAME.match(entry.pw_name)
        if m and not _pid_alive(int(m.group(1))) and not procs.owned_by(entry.pw_uid):
            subprocess.run(["userdel", "-r", entry.pw_name], capture_output=True)


def new_user() -> tuple[str, Path, bool]:
    """(login, home, whether this server owns the user): a fresh user as root, else the current one."""
    if os.geteuid() != 0:
        me = pwd.getpwuid(os.getuid())
        return me.pw_name, Path(me.pw_dir), False
    _delete_stale_users()
    name = f"{USER_PREFIX}{os.getpid()}-{next(_numbers)}"
    _retry(["useradd", "-m", "-s", "/bin/sh", name])
    # useradd leaves the password "!", which with UsePAM no means "locked", even for key logins.
    _retry(["usermod", "-p", "*", name])
    return name, Path(pwd.getpwnam(name).pw_dir), True


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
    owns_user: bool = False
    uid: int = -1
    stopped: bool = False

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

    def _own(self) -> list[procs.Proc]:
        """This server's processes: its listener's tree, and all that runs as its own user."""
        table = procs.processes()
        mine = {p.pid: p for p in procs.descendants(self.proc.pid, table)}
        if self.owns_user:
            mine.update({p.pid: p for p in table if p.uid == self.uid})
        return list(mine.values())

    def connections_seen(self) -> int:
        """How many connections this server has accepted so far (its log, LogLevel VERBOSE), closed ones too."""
        log = self.root / "sshd.log"
        return log.read_text(errors="replace").count("Connection from ") if log.exists() else 0

    def processes(self, pattern: str) -> list[int]:
        """PIDs of this server's processes whose command line matches `pattern` (a regex)."""
        return [p.pid for p in procs.matching(pattern, self._own())]

    def kill_connections(self) -> list[int]:
        """Drop every live SSH connection to this server (its per-connection sshd processes), as a cut
        link would: the listener stays up and so do the commands those connections started."""
        table = procs.processes()
        links = [p.pid for p in procs.descendants(self.proc.pid, table) if p.cmdline.startswith("sshd:")]
        procs.kill(links, grace=0.5)
        return links

    def stop(self) -> None:
        if self.proc.poll() is None:
            procs.kill([self.proc.pid, *(p.pid for p in procs.descendants(self.proc.pid))])
            self.proc.wait(timeout=10)
        # Commands whose connection ended were reparented away from the listener: its user's, then.
        procs.kill([p.pid for p in self._own()])
        if self.owns_user and not self.stopped:
            subprocess.run(["userdel", "-r", self.user], capture_output=True)
        self.stopped = True
        shutil.rmtree(self.root, ignore_errors=True)


def start(*, host_key: Path | None = None, extra_config: str = "", port: int | None = None) -> SSHServer:
    if not SSHD.exists() or not shutil.which("ssh-keygen"):
        raise SSHDUnavailable("OpenSSH sshd is not installed (make test installs openssh-server as root)")
    user, home, owns_user = new_user()
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
                owns_user=owns_user,
                uid=pwd.getpwnam(user).pw_uid,
            )
        if port is not None or attempt == 4:
            log = (root / "sshd.log").read_text(errors="replace") if (root / "sshd.log").exists() else ""
            shutil.rmtree(root, ignore_errors=True)
            if owns_user:
                subprocess.run(["userdel", "-r", user], capture_output=True)
            raise SSHDUnavailable(f"sshd did not start: {log.strip()[-300:]}")
    raise SSHDUnavailable("sshd did not start")
