"""The vLLM/SGLang templates' `servectl.sh` (agent/templates), run as a campaign runs it: `sh servectl.sh vllm …` in a
host's working directory. `vllm` is a stand-in on PATH that answers /health on SERVE_PORT, so what is under test —
the script's ./flags file, its restarts and `is`, which reads the running server's /proc/PID/cmdline — is real."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

SERVECTL = ROOT / "agent" / "templates" / "servectl.sh"
STAND_IN = """\
#!/usr/bin/env python3
# `vllm serve MODEL --port P FLAGS…`: answers GET /health until it is stopped; its argv is what `is` reads.
import http.server
import sys

port = int(sys.argv[sys.argv.index("--port") + 1])


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()

    def log_message(self, *args):
        pass


http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Host:
    dir: Path
    env: dict[str, str]

    def ctl(self, *args: str) -> int:
        """`sh servectl.sh vllm ARGS…` in the host's directory: its exit code (it never fails on its own usage)."""
        p = subprocess.run(
            ["sh", "servectl.sh", "vllm", *args],
            cwd=self.dir,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert "parameter not set" not in p.stderr and "not found" not in p.stderr, p.stderr
        return p.returncode


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    """A host's working directory with servectl.sh uploaded and the stand-in `vllm` on PATH; the server it starts is
    stopped afterwards, by the pid the script recorded."""
    d = tmp_path / "host"
    d.mkdir()
    shutil.copy(SERVECTL, d / "servectl.sh")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "vllm").write_text(STAND_IN)
    (bin_dir / "vllm").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "SERVE_PORT": str(_free_port()),
    }
    yield Host(d, env)
    pid_file = d / "server.pid"
    if pid_file.exists():
        pid = int(pid_file.read_text())
        if Path(f"/proc/{pid}").exists() and os.readlink(f"/proc/{pid}/cwd") == str(d.resolve()):
            os.kill(pid, signal.SIGKILL)


def test_is_checks_a_flag_without_a_value_and_set_unset_handle_one(host: Host):
    ctl, flags = host.ctl, host.dir / "flags"
    assert ctl("start", "my-model") == 0
    assert ctl("is", "--enable-chunked-prefill") == 1  # not started with it
    # A flag without a value: set, the server restarted with it, and `is FLAG` sees it.
    assert ctl("set", "--enable-chunked-prefill") == 0
    assert flags.read_text() == "--enable-chunked-prefill\n"
    assert ctl("is", "--enable-chunked-prefill") == 0
    assert ctl("is", "--no-enable-prefix-caching") == 1
    assert ctl("set", "--no-enable-prefix-caching") == 0
    assert ctl("is", "--no-enable-prefix-caching") == 0 and ctl("is", "--enable-chunked-prefill") == 0
    # Flags with values as before; a value is compared as text (0.9. is not a pattern that matches 0.95).
    assert ctl("set", "--max-num-seqs", "256") == 0 and ctl("set", "--gpu-memory-utilization", "0.95") == 0
    assert ctl("is", "--max-num-seqs", "256") == 0
    assert ctl("is", "--max-num-seqs", "25") == 1
    assert ctl("is", "--max-num-seqs") == 0  # started with it, whatever its value
    assert ctl("is", "--gpu-memory-utilization", "0.95") == 0
    assert ctl("is", "--gpu-memory-utilization", "0.9.") == 1
    assert ctl("is", "--enable-chunked") == 1  # a flag is a whole argument, not a prefix
    # unset takes a valueless flag out too (the old `^FLAG ` pattern left it in).
    assert ctl("unset", "--enable-chunked-prefill") == 0
    assert flags.read_text().splitlines() == [
        "--no-enable-prefix-caching",
        "--max-num-seqs 256",
        "--gpu-memory-utilization 0.95",
    ]
    assert ctl("is", "--enable-chunked-prefill") == 1 and ctl("is", "--max-num-seqs", "256") == 0
    assert ctl("stop") == 0
    assert ctl("is", "--max-num-seqs", "256") == 1  # no server of this directory's: nothing is in effect
