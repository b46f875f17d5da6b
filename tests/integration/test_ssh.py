"""SSHTransport against a real OpenSSH sshd on 127.0.0.1 (no mocks)."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests import procs
from tests import sshd as harness
from tools.artifacts import ArtifactStore
from tools.ssh import KnownHosts, SSHTransport
from tools.transport import backstop, gone_after


def test_exit_codes_stderr_env_and_cwd(ssh_transport, sshd):
    host = sshd.host()
    r = ssh_transport.run(host, "echo out; echo err >&2; exit 7", timeout=10)
    assert r.exit_code == 7 and r.stdout_tail == "out\n" and r.stderr_tail == "err\n" and r.error is None
    assert not r.ok
    r = ssh_transport.run(
        host, 'printf "%s|" "$GREETING"; pwd', timeout=10, env={"GREETING": "it's a 'test'"}, cwd="/tmp"
    )
    assert r.ok and r.stdout_tail == "it's a 'test'|/tmp\n"
    wd = ssh_transport.workdir(host)
    assert wd.startswith(str(sshd.home)) and ssh_transport.run(host, "pwd", timeout=10).stdout_tail.strip() == wd


def test_lines_stream_to_the_callback_as_they_come(ssh_transport, sshd):
    seen: list[tuple[float, str]] = []
    start = time.monotonic()
    r = ssh_transport.run(
        sshd.host(),
        "echo one; sleep 1; echo two",
        timeout=10,
        on_line=lambda stream, line: seen.append((time.monotonic() - start, line)),
    )
    assert r.ok and [line for _, line in seen] == ["one", "two"]
    assert seen[0][0] < 0.8 <= seen[1][0]


def test_50mb_on_both_streams_without_deadlock(ssh_transport, sshd, tmp_path):
    r = ssh_transport.run(
        sshd.host(),
        "head -c 26214400 /dev/zero | tr '\\0' 'a' | fold -w 1000 & "
        "head -c 26214400 /dev/zero | tr '\\0' 'b' | fold -w 1000 >&2; wait",
        timeout=120,
    )
    assert r.ok, r.error
    assert r.stdout_truncated and len(r.stdout_tail) <= (1 << 20) + 1001
    # every byte, in order, on the right stream, under the name of its own digest (the channel's buffer is ours)
    for name, letter in ((r.artifact, b"a"), (r.stderr_artifact, b"b")):
        expected = (letter * 1000 + b"\n") * 26214 + letter * 400
        assert (tmp_path / "artifacts" / name).read_bytes() == expected
        assert name == f"sha256-{hashlib.sha256(expected).hexdigest()}"


def test_timeout_kills_the_remote_process_tree(ssh_transport, sshd):
    marker = f"signoff-wedge-{os.getpid()}"
    started = time.monotonic()
    r = ssh_transport.run(sshd.host(), f"sh -c 'sleep 300; echo {marker}' & sleep 301 # {marker}", timeout=1.5)
    assert r.timed_out and r.killed and r.exit_code is None and not r.ok
    assert time.monotonic() - started < 8
    time.sleep(0.5)
    assert sshd.processes(marker) == [] and sshd.processes("sleep 30[01]") == []


def test_the_backstop_ends_a_command_that_signoff_can_no_longer_reach(sshd, tmp_path):
    # Attack: signoff's link is cut (as if signoff died) just after the command started, so our deadline and our
    # kill never come. Part of the command ignores TERM, and the shell itself is replaced by `exec`.
    t = SSHTransport(ArtifactStore(tmp_path / "a"), KnownHosts([sshd.known_hosts], None))
    host = sshd.host(name="cut-off")
    stubborn, plain = (f"sleep 3000.{os.getpid()}{n}" for n in (1, 2))
    command = f"bash -c 'trap \"\" TERM; {stubborn}' & echo started; exec {plain}"

    def cut(stream: str, line: str) -> None:
        t._pool["cut-off"].client.get_transport().sock.close()

    timeout = 1.5
    started = time.monotonic()
    r = t.run(host, command, timeout=timeout, on_line=cut)
    assert r.link_lost and not r.ok, r
    orphans = f"^({stubborn}|{plain})$"  # the sleeps themselves, not the shells whose text names them
    assert len(procs.matching(orphans, procs.processes())) == 2  # nothing on our side can end them now
    while procs.matching(orphans, procs.processes()) and time.monotonic() - started < gone_after(timeout) + 10:
        time.sleep(0.2)
    assert procs.matching(orphans, procs.processes()) == [], "the backstop did not end the orphaned command"
    # Gone only once the backstop fired (it may fire up to a second early, see tools/ssh/script.py: watchdog),
    # and the TERM-ignoring part only by its KILL.
    assert time.monotonic() - started >= backstop(timeout)[0] - 1
    t.close()


def test_the_backstop_is_not_one_of_the_commands_jobs_and_leaves_with_it(ssh_transport, sshd):
    marker = f"signoff-short-{os.getpid()}"
    started = time.monotonic()
    r = ssh_transport.run(sshd.host(), f"sleep 0.2 & wait; jobs | wc -l # {marker}", timeout=30)
    assert r.ok and r.stdout_tail.strip() == "0"  # `wait` and `jobs` see only the command's own jobs
    assert time.monotonic() - started < 10
    deadline = time.monotonic() + 10
    while sshd.processes(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sshd.processes(marker) == []  # the watchdog went with the command's shell


def test_a_signal_killed_command_is_not_success(ssh_transport, sshd):
    r = ssh_transport.run(sshd.host(), "kill -KILL $$", timeout=10)
    assert not r.ok and r.exit_code != 0


def test_unknown_host_key_is_rejected(sshd, tmp_path):
    t = SSHTransport(ArtifactStore(tmp_path / "a"), KnownHosts([], None))
    r = t.run(sshd.host(), "true", timeout=10)
    assert not r.ok and "host key for [127.0.0.1]:" in r.error and "is unknown (ssh-ed25519 SHA256:" in r.error
    assert "--accept-new-host-keys" in r.error


def test_trust_on_first_use_pins_and_reports_the_fingerprint(sshd, tmp_path):
    pins: list[tuple[str, str, str]] = []
    pinned = tmp_path / "known_hosts.pinned"
    t = SSHTransport(
        ArtifactStore(tmp_path / "a"), KnownHosts([], pinned, accept_new=True, on_pin=lambda *a: pins.append(a))
    )
    assert t.run(sshd.host(), "true", timeout=10).ok
    assert pins and pins[0][0] == f"[127.0.0.1]:{sshd.port}" and pins[0][2].startswith("SHA256:")
    assert sshd.host_key_b64 in pinned.read_text()
    # A new run trusting only that pin connects without accept_new.
    t2 = SSHTransport(ArtifactStore(tmp_path / "b"), KnownHosts([], pinned))
    assert t2.run(sshd.host(), "true", timeout=10).ok
    t.close()
    t2.close()


def test_changed_host_key_is_refused_with_both_fingerprints(sshd, tmp_path):
    other = harness.start()
    try:
        known = tmp_path / "known_hosts"
        # The "known" key for the other server's address is the first server's key: a changed key.
        known.write_text(f"[127.0.0.1]:{other.port} ssh-ed25519 {sshd.host_key_b64}\n")
        t = SSHTransport(ArtifactStore(tmp_path / "a"), KnownHosts([known], None, accept_new=True))
        r = t.run(other.host(), "true", timeout=10)
        assert not r.ok and "HOST KEY CHANGED" in r.error
        assert r.error.count("SHA256:") == 2
    finally:
        other.stop()


def test_cert_authority_lines_do_not_break_loading(sshd, tmp_path):
    known = tmp_path / "known_hosts"
    known.write_text(
        "@cert-authority *.example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG0000\n" + sshd.known_hosts.read_text()
    )
    store = KnownHosts([known], None)
    assert store.warnings and "@cert-authority" in store.warnings[0]
    t = SSHTransport(ArtifactStore(tmp_path / "a"), store)
    assert t.run(sshd.host(), "true", timeout=10).ok
    t.close()


def test_wrong_key_is_an_authentication_error(sshd, tmp_path):
    wrong = tmp_path / "wrong_key"
    harness.keygen(wrong, "wrong")
    t = SSHTransport(ArtifactStore(tmp_path / "a"), KnownHosts([sshd.known_hosts], None))
    r = t.run(sshd.host(key_path=str(wrong)), "true", timeout=10)
    assert not r.ok and "authentication failed with" in r.error and str(wrong) in r.error


def test_passphrase_protected_key(sshd, tmp_path, monkeypatch):
    key = tmp_path / "locked_key"
    harness.keygen(key, "locked", passphrase="correct horse")
    with open(sshd.root / "authorized_keys", "a") as fh:
        fh.write(Path(f"{key}.pub").read_text())
    t = SSHTransport(ArtifactStore(tmp_path / "a"), KnownHosts([sshd.known_hosts], None))
    r = t.run(sshd.host(key_path=str(key)), "true", timeout=10)
    # the hint itself (the tmp path holds "passphrase" too, so the word alone would prove nothing)
    assert not r.ok and "set passphrase_env on the host" in r.error, r.error
    monkeypatch.setenv("TEST_KEY_PASSPHRASE", "correct horse")
    t2 = SSHTransport(ArtifactStore(tmp_path / "b"), KnownHosts([sshd.known_hosts], None))
    assert t2.run(
        sshd.host(name="locked", key_path=str(key), passphrase_env="TEST_KEY_PASSPHRASE"), "true", timeout=10
    ).ok


def test_closed_port_is_connection_refused(sshd, tmp_path):
    t = SSHTransport(ArtifactStore(tmp_path / "a"), KnownHosts([sshd.known_hosts], None))
    r = t.run(sshd.host().model_copy(update={"port": harness._free_port()}), "true", timeout=10)
    assert not r.ok and "connection refused" in r.error


def test_sshd_killed_mid_command_is_a_clear_error(tmp_path):
    server = harness.start()
    try:
        t = SSHTransport(ArtifactStore(tmp_path / "a"), KnownHosts([server.known_hosts], None))
        assert t.run(server.host(), "true", timeout=10).ok
        threading.Timer(0.7, server.stop).start()
        started = time.monotonic()
        r = t.run(server.host(), "sleep 20", timeout=30)
        assert not r.ok and r.error and "connection lost" in r.error
        assert time.monotonic() - started < 10
        r = t.run(server.host(), "true", timeout=10)
        assert not r.ok and "connection refused" in r.error
    finally:
        server.stop()


def test_eight_hosts_in_parallel_take_the_time_of_one(ssh_transport, sshd):
    hosts = [sshd.host(name=f"gpu-{i}") for i in range(8)]
    for h in hosts:  # connect first: this measures the commands, not eight handshakes on two cores
        assert ssh_transport.run(h, "true", timeout=10).ok
    started = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda h: ssh_transport.run(h, "sleep 1", timeout=10), hosts))
    assert all(r.ok for r in results)
    assert time.monotonic() - started < 2.0


def test_sixteen_commands_through_one_pooled_connection(ssh_transport, sshd):
    host = sshd.host(name="pooled")
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(lambda i: ssh_transport.run(host, f"sleep 0.3; echo {i}", timeout=20), range(16)))
    assert all(r.ok for r in results), sorted({r.error or r.stderr_tail.strip() for r in results if not r.ok})
    assert [r.stdout_tail.strip() for r in results] == [str(i) for i in range(16)]
    assert len(ssh_transport._pool) == 1


def test_a_burst_of_new_connections_beyond_maxstartups(sshd, tmp_path):
    t = SSHTransport(ArtifactStore(tmp_path / "a"), KnownHosts([sshd.known_hosts], None))
    hosts = [sshd.host(name=f"burst-{i}") for i in range(30)]
    with ThreadPoolExecutor(30) as pool:
        results = list(pool.map(lambda h: t.run(h, "true", timeout=30), hosts))
    assert [r.error for r in results if not r.ok] == []
    t.close()


def test_upload_and_the_wrapper_quotes_everything(ssh_transport, sshd, tmp_path):
    local = tmp_path / "payload.txt"
    local.write_text("payload $(not run) `nor this`\n")
    host = sshd.host()
    ssh_transport.put(host, local, "payload.txt")
    r = ssh_transport.run(host, "cat payload.txt", timeout=10)
    assert r.stdout_tail == local.read_text()
    odd = f"{ssh_transport.workdir(host)}/dir with 'quotes' and $(dollars)"
    assert ssh_transport.run(host, 'mkdir -p "$D"', timeout=10, env={"D": odd}).ok
    r = ssh_transport.run(host, 'pwd; printf "%s\\n" "$V"', timeout=10, cwd=odd, env={"V": "a 'b' \"c\" `d`"})
    assert r.stdout_tail.splitlines() == [odd, "a 'b' \"c\" `d`"]


@pytest.mark.parametrize("secret_env", ["DEPLOY_TOKEN"])
def test_redaction_over_ssh(sshd, tmp_path, secret_env):
    from tools.secrets import Redactor

    canary = "canary-7f3a9c-secret"
    t = SSHTransport(
        ArtifactStore(tmp_path / "a"),
        KnownHosts([sshd.known_hosts], None),
        redact=Redactor.from_environment({secret_env: canary}),
    )
    r = t.run(sshd.host(), f"echo {canary}; echo {canary} >&2", timeout=10, stdin=canary.encode())
    assert canary not in r.command + r.stdout_tail + r.stderr_tail
    for f in (tmp_path / "a").iterdir():
        assert canary.encode() not in f.read_bytes()
    t.close()


def test_proxy_jump_tunnels_through_a_direct_tcpip_channel(sshd, tmp_path):
    t = SSHTransport(ArtifactStore(tmp_path / "a"), KnownHosts([sshd.known_hosts], None))
    jump = f"{sshd.user}@127.0.0.1:{sshd.port}"
    r = t.run(sshd.host(name="behind-jump", proxy_jump=jump), "echo $SSH_CONNECTION", timeout=10)
    assert r.ok, r.error
    # Seen from the target, the client is the jump host's forwarding, i.e. 127.0.0.1 again, via a tunnel.
    assert r.stdout_tail.startswith("127.0.0.1 ")
    t.close()


def test_ssh_agent_only_when_asked(sshd, tmp_path, monkeypatch):
    import subprocess

    sock = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL)
    try:
        for _ in range(50):
            if sock.exists():
                break
            time.sleep(0.05)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
        subprocess.run(["ssh-add", "-q", str(sshd.client_key)], check=True, capture_output=True)
        no_key = {"key_path": None}
        t = SSHTransport(ArtifactStore(tmp_path / "a"), KnownHosts([sshd.known_hosts], None))
        r = t.run(sshd.host(name="agentless", **no_key), "true", timeout=10)
        assert not r.ok and "no key to authenticate with" in r.error  # the agent is not consulted by default
        r = t.run(sshd.host(name="agentful", use_agent=True, **no_key), "true", timeout=10)
        assert r.ok, r.error
        t.close()
    finally:
        agent.terminate()


def test_a_dead_pooled_connection_is_replaced_once(ssh_transport, sshd):
    host = sshd.host(name="flaky")
    assert ssh_transport.run(host, "true", timeout=10).ok
    conn = ssh_transport._pool["flaky"]
    conn.client.get_transport().sock.close()  # the link dies under the pool
    r = ssh_transport.run(host, "echo again", timeout=10)
    assert r.ok and r.stdout_tail == "again\n"
    assert ssh_transport._pool["flaky"] is not conn


@pytest.mark.skipif(os.geteuid() != 0, reason="a root login needs root to run sshd")
def test_timeout_kill_leaves_nothing_behind_for_a_root_login_too(ssh_transport, sshd):
    # sshd refuses the RFC 4254 `signal` request for root; the process-group kill must not depend on it.
    # (The test sshd's AuthorizedKeysFile is shared by every user, root included.)
    marker = f"signoff-root-wedge-{os.getpid()}"
    r = ssh_transport.run(sshd.host(name="as-root", user="root"), f"sleep 300 # {marker}", timeout=1.5)
    assert r.timed_out and r.killed, r.error
    time.sleep(0.5)
    assert procs.matching(marker, procs.processes()) == []


def test_a_link_that_dies_as_the_channel_closes_gives_a_result_not_a_traceback(ssh_transport, sshd):
    # Seen in CI under load: paramiko's channel.close() raised EOFError from a socket that had just died.
    # Reproduced on the real pooled connection by making the close of one channel fail that way.
    host = sshd.host(name="closing")
    conn, chan = ssh_transport._open(host)
    real_open = ssh_transport._open

    class DyingClose:
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def close(self):
            self.inner.close()
            raise EOFError

    conn.slots.release()
    chan.close()
    ssh_transport._open = lambda h: (lambda c_ch: (c_ch[0], DyingClose(c_ch[1])))(real_open(h))
    try:
        result = ssh_transport.run(host, "echo still-here", timeout=10)
    finally:
        ssh_transport._open = real_open
    assert result.exit_code == 0 and result.stdout_tail == "still-here\n"
    assert ssh_transport.run(host, "echo next", timeout=10).stdout_tail == "next\n"  # its slot was given back


def test_a_late_eof_after_the_command_ended_does_not_drop_the_pooled_connection(sshd, tmp_path, monkeypatch):
    """paramiko builds a channel's EOF under its lock and sends it after; a thread that loses the CPU in
    between sends it after the command ended and the server closed the channel, and OpenSSH then drops
    the whole connection with every command on it ("ieof packet referred to nonexistent channel": the
    CI failure of the sixteen-command test). Here every EOF is that late."""
    import paramiko

    def late_eof(chan, how=1):
        with chan.lock:
            message = chan._send_eof()
        deadline = time.monotonic() + 5
        while not chan.closed and time.monotonic() < deadline:  # the server ends the command and the channel
            time.sleep(0.01)
        if message is not None:
            chan.transport._send_user_message(message)

    t = SSHTransport(ArtifactStore(tmp_path / "a"), KnownHosts([sshd.known_hosts], None))
    host = sshd.host(name="late-eof")
    assert t.run(host, "true", timeout=10).ok  # the pooled connection and the working directory
    monkeypatch.setattr(paramiko.Channel, "shutdown", late_eof)
    results = [t.run(host, f"echo {i}", timeout=10) for i in range(3)]
    monkeypatch.undo()
    assert all(r.ok and not r.link_lost for r in results), [r.error for r in results]
    assert len(t._pool) == 1 and t._pool[host.name].alive()
    t.close()


# -------------------------------------------------- the channel opened ahead (tools/ssh/channels.py: open_spare)


def test_the_next_command_runs_on_the_channel_opened_while_the_last_one_ran(ssh_transport, sshd):
    host = sshd.host(name="ahead")
    assert ssh_transport.run(host, "true", timeout=10).ok
    conn = ssh_transport._pool["ahead"]
    spare = conn.spare
    assert spare is not None  # opened while `true` ran
    r = ssh_transport.run(host, "exit 3", timeout=10)
    assert r.exit_code == 3
    assert spare.chan.exit_status == 3  # this very channel ran it
    assert conn.spare is not None and conn.spare is not spare  # and the one after it is open already


def test_a_channel_opened_ahead_on_a_link_that_died_since_is_not_trusted(ssh_transport, sshd):
    # The link dies between two commands, while a channel waits for the second: paramiko may not know yet (its
    # reading thread has not tried the socket), so the channel looks open. The command must not be lost with it:
    # its request cannot leave, so it goes on a new connection.
    host = sshd.host(name="ahead-dead")
    assert ssh_transport.run(host, "true", timeout=10).ok
    conn = ssh_transport._pool["ahead-dead"]
    spare = conn.spare
    assert spare is not None
    conn.client.get_transport().sock.close()
    r = ssh_transport.run(host, "echo again", timeout=10)
    assert r.ok and r.stdout_tail == "again\n", r.error
    assert ssh_transport._pool["ahead-dead"] is not conn
    assert spare.chan.exit_status == -1  # it never ran anything


def test_a_request_that_could_not_leave_goes_once_on_a_new_connection_and_runs_once(ssh_transport, sshd):
    # The deterministic form of the above: the socket refuses the exec request's bytes before paramiko's reading
    # thread could know the link is gone. Nothing reached sshd, so the request goes again, on a new link, once.
    host = sshd.host(name="ahead-refused-bytes")
    assert ssh_transport.run(host, "true", timeout=10).ok
    conn = ssh_transport._pool["ahead-refused-bytes"]
    transport = conn.transport
    real = transport._send_user_message
    refused: list[bytes] = []

    def refuse_once(m):
        # The exec request, and only it: under load another message may go first (ci121, two CPU hogs: a channel
        # close, `a\x00\x00\x00\x01`, was refused instead and the exec request then went out as usual).
        if not refused and b"exec" in m.asbytes():
            refused.append(m.asbytes())
            raise OSError(32, "Broken pipe")
        return real(m)

    transport._send_user_message = refuse_once
    r = ssh_transport.run(host, "echo ran >> runs.txt; cat runs.txt", timeout=10)
    assert r.ok and r.stdout_tail == "ran\n", r.error  # ran, and once
    assert refused and b"exec" in refused[0]
    assert ssh_transport._pool["ahead-refused-bytes"] is not conn and conn.broken


def slots_free(conn) -> int:
    return conn.slots._value + (1 if conn.spare is not None else 0)  # a channel opened ahead holds one


def test_a_channel_opened_ahead_that_was_closed_since_is_not_used(ssh_transport, sshd):
    host = sshd.host(name="ahead-closed")
    assert ssh_transport.run(host, "true", timeout=10).ok
    conn = ssh_transport._pool["ahead-closed"]
    spare = conn.spare
    assert spare is not None and spare.ready(conn.transport) is spare.chan
    spare.chan.close()  # as a CLOSE from sshd would leave it
    r = ssh_transport.run(host, "echo fine", timeout=10)
    assert r.ok and r.stdout_tail == "fine\n"
    assert ssh_transport._pool["ahead-closed"] is conn  # the link was sound: kept
    assert conn.spare is None and not conn.ahead  # and no more channels ahead on it
    assert [ssh_transport.run(host, f"echo {i}", timeout=10).stdout_tail for i in range(3)] == ["0\n", "1\n", "2\n"]
    assert slots_free(conn) == 4  # the discarded channel's slot came back


def test_a_server_allowing_one_session_refuses_the_channel_ahead_and_every_command_still_runs(tmp_path):
    server = harness.start(extra_config="MaxSessions 1")
    try:
        t = SSHTransport(ArtifactStore(tmp_path / "artifacts"), KnownHosts([server.known_hosts], None), session="one")
        host = server.host()
        outs = [t.run(host, f"echo {i}", timeout=10) for i in range(6)]
        assert [(r.ok, r.stdout_tail) for r in outs] == [(True, f"{i}\n") for i in range(6)]
        conn = t._pool[host.name]
        assert not conn.ahead and conn.spare is None  # refused once, not asked again on this link
        assert conn.transport.saved_exception is None  # the refusal is not left for another open to report
        assert slots_free(conn) == 4
        t.close()
    finally:
        server.stop()


def test_never_more_channels_than_the_pool_allows_with_one_opened_ahead(ssh_transport, sshd):
    host = sshd.host(name="ahead-burst")
    assert ssh_transport.run(host, "true", timeout=10).ok
    conn = ssh_transport._pool["ahead-burst"]
    most: list[int] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            most.append(sum(1 for c in conn.transport._channels.values() if not c.closed))
            time.sleep(0.001)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(lambda i: ssh_transport.run(host, f"sleep 0.2; echo {i}", timeout=10), range(16)))
    finally:
        stop.set()
        watcher.join()
    assert [r.stdout_tail for r in results] == [f"{i}\n" for i in range(16)]
    assert max(most) <= 4  # CHANNELS_PER_CONNECTION, the spare included
    assert slots_free(conn) == 4


def test_a_connection_closed_while_a_command_takes_its_channel_opened_ahead_gives_a_result(ssh_transport, sshd):
    # Another thread closes the pooled connection (SSHTransport.close) between this command finding the connection
    # and taking the channel opened ahead on it: paramiko's client then has no transport at all.
    host = sshd.host(name="ahead-closing")
    assert ssh_transport.run(host, "true", timeout=10).ok
    conn = ssh_transport._pool["ahead-closing"]
    assert conn.spare is not None
    real = ssh_transport.connection

    def closed_under_us(h, **kw):
        found = real(h, **kw)
        if found is conn:
            conn.close()
        return found

    ssh_transport.connection = closed_under_us
    r = ssh_transport.run(host, "echo after", timeout=10)
    ssh_transport.connection = real
    assert r.error is not None or r.stdout_tail == "after\n"  # a result either way, never a traceback
    assert ssh_transport.run(host, "echo next", timeout=10).stdout_tail == "next\n"


def test_the_idle_probe_takes_a_refused_channel_for_a_live_link(tmp_path):
    # MaxSessions 2: a command running past the idle probe's minute holds one session, the channel opened ahead (or,
    # if sshd had not freed a session yet when it was asked for, one this test opens) the other; the probe's own
    # channel is refused. That is an answer: the link must not be closed under the command.
    import paramiko

    server = harness.start(extra_config="MaxSessions 2")
    try:
        t = SSHTransport(ArtifactStore(tmp_path / "artifacts"), KnownHosts([server.known_hosts], None), session="p")
        host = server.host()
        assert t.run(host, "true", timeout=10).ok
        conn = t._pool[host.name]
        started = threading.Event()
        results: list = []

        def long_command() -> None:
            results.append(
                t.run(host, "echo started; sleep 3; echo long", timeout=30, on_line=lambda s, line: started.set())
            )

        runner = threading.Thread(target=long_command)
        runner.start()
        assert started.wait(20)
        transport = conn.transport
        deadline = time.monotonic() + 20
        extra = []
        while sum(1 for c in transport._channels.values() if c.active and not c.closed) < 2:
            assert time.monotonic() < deadline, "sshd never gave the second session"
            try:
                extra.append(transport.open_session(timeout=5))
            except paramiko.ChannelException:  # sshd frees a session lazily
                time.sleep(0.05)
        refused: list[bool] = []
        real_open = transport.open_session

        def recording(*args, **kwargs):
            try:
                return real_open(*args, **kwargs)
            except paramiko.ChannelException:
                refused.append(True)
                raise

        transport.open_session = recording
        assert t._probe(conn) and refused  # refused, and taken for a live link
        runner.join()
        assert results and results[0].stdout_tail == "started\nlong\n", results and results[0].error
        t.close()
    finally:
        server.stop()
