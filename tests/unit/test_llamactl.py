"""examples/llamacpp/llamactl.sh's read-only verbs — the ones the campaign's probes and checks rely on — run
for real in a directory of the test's own, against a stand-in `llama-server` that prints what the real one
prints for --help and --list-devices on a CPU-only build (the real server runs in
tests/integration/test_llamacpp.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

SCRIPT = ROOT / "examples" / "llamacpp" / "llamactl.sh"
DOCS = "src/llama_cpp_python-0.3.36/vendor/llama.cpp/docs"
SERVER = """#!/bin/sh
case "$1" in
--help) printf '%s\\n' '-np,   --parallel N    number of server slots (default: -1, -1 = auto)' \\
    '-dt,   --defrag-thold N    KV cache defragmentation threshold (DEPRECATED)' ;;
--list-devices) printf '%s\\n' 'Available devices:' '  (none)' ;;
esac
"""


@pytest.fixture
def host(tmp_path: Path) -> Path:
    home = tmp_path / "llama"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "llama-server").write_text(SERVER)
    (home / "bin" / "llama-server").chmod(0o755)
    (home / DOCS).mkdir(parents=True)
    (home / DOCS / "function-calling.md").write_text("intro\n> Beware of extreme KV quantizations (e.g. `-ctk q4_0`)\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / "llama.home").write_text(f"{home}\n")
    (work / "server.args").write_text("--host 127.0.0.1\n--port 1\n--parallel 2\n--no-cont-batching\n-ot blk.*=CPU\n")
    return work


def ctl(host: Path, *args: str) -> tuple[int, str]:
    p = subprocess.run(["sh", str(SCRIPT), *args], cwd=host, capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout + p.stderr


def test_docs_finds_the_phrase_with_its_line_and_exits_1_when_it_is_absent(host: Path) -> None:
    code, out = ctl(host, "docs", "function-calling.md", "Beware of extreme KV quantizations")
    assert code == 0 and out.startswith("llama.cpp docs/function-calling.md:2:> Beware"), out
    code, out = ctl(host, "docs", "function-calling.md", "a phrase llama.cpp never wrote")
    assert code == 1 and out == "", out  # the q4_0 probe expects exit 1 when the warning is gone
    assert ctl(host, "docs", "../../etc/passwd", "root")[0] == 1


def test_deprecated_and_gpu_read_llama_servers_own_answers(host: Path) -> None:
    code, out = ctl(host, "deprecated", "--defrag-thold")
    assert code == 0 and "(DEPRECATED)" in out, out
    assert ctl(host, "deprecated", "--parallel")[0] == 1
    code, out = ctl(host, "gpu")
    assert code == 1 and "lists no GPU" in out, out


def test_is_reads_server_args_when_the_server_is_down_flags_with_and_without_values(host: Path) -> None:
    assert ctl(host, "is", "--parallel", "2") == (0, "--parallel = 2 in server.args (the server is down)\n")
    assert ctl(host, "is", "--parallel", "8")[0] == 1
    assert ctl(host, "is", "--no-cont-batching")[0] == 0  # a flag without a value
    assert ctl(host, "is", "-ctk")[0] == 1
    assert ctl(host, "is", "-ot", "blk.*=CPU")[0] == 0  # not globbed against the directory's files


def test_set_refuses_a_value_that_would_split_a_line(host: Path) -> None:
    code, out = ctl(host, "set", "--alias", "a b")
    assert code == 1 and "one word without blanks" in out
    assert "--alias" not in (host / "server.args").read_text()
