"""examples/llamacpp/loadgen.py against a small streaming server of the test's own (stdlib http.server) that
answers like llama-server — and fails like one: an HTTP error, a stream cut before [DONE], fewer tokens
than asked. The result is vLLM's --save-result JSON that signoff's vllm-json parser reads, every failure
counted with its text."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tools.benchparse import parse

LOADGEN = ROOT / "examples" / "llamacpp" / "loadgen.py"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        body = b'{"status":"ok"}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        n = int(request["prompt"].split(":")[0].split()[-1]) if request["prompt"].startswith("Request") else 0
        if n == 3:
            body = b'{"error":{"code":503,"message":"Loading model"}}'
            self.send_response(503)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        tokens = request["max_tokens"] - (1 if n == 5 else 0)  # request 5: one token short
        for _ in range(tokens):
            self._chunk(b'data: {"choices":[{"text":"x"}]}\n\n')
            if n == 7:  # request 7: the server goes away mid-stream
                self.wfile.flush()
                self.close_connection = True
                return
        self._chunk(b'data: {"choices":[],"usage":{"completion_tokens":%d}}\n\n' % tokens)
        self._chunk(b"data: [DONE]\n\n")
        self._chunk(b"")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))


@pytest.fixture
def server() -> Iterator[int]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def _run(port: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(LOADGEN), *args, "--port", str(port)], capture_output=True, text=True, timeout=60
    )


def test_bench_writes_vllm_json_with_every_failure_counted_and_its_text(server: int, tmp_path: Path) -> None:
    result_file = tmp_path / "result.json"
    p = _run(
        server, "bench", "--concurrency", "4", "--num-prompts", "10", "--output-len", "6", "--result", str(result_file)
    )
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout.strip().splitlines()[-1])
    assert json.loads(result_file.read_text()) == data
    assert data["completed"] == 7 and data["failed"] == 3 and data["max_concurrency"] == 4
    assert data["total_output_tokens"] == 7 * 6 and data["output_lens"][0] == 6
    assert data["errors"][3].startswith("HTTP 503: ") and "Loading model" in data["errors"][3]
    assert data["errors"][5] == "5 of 6 output tokens"
    assert "ended" in data["errors"][7] or "IncompleteRead" in data["errors"][7], data["errors"][7]
    assert [i for i, e in enumerate(data["errors"]) if e] == [3, 5, 7]
    assert all(len(gaps) == 5 for i, gaps in enumerate(data["itls"]) if not data["errors"][i])
    assert data["p99_ttft_ms"] >= data["median_ttft_ms"] > 0 and data["client_cpu_s"] > 0

    record = parse("vllm-json", p.stdout, expected=10)
    assert record.completed == 7 and record.failed == 3
    assert record.error_samples == [data["errors"][3], data["errors"][5], data["errors"][7]]
    assert record.output_tok_s == pytest.approx(data["output_throughput"])
    assert record.load == {"concurrency": 4}
    assert "3 failed" in p.stderr


def test_health_and_the_stress_modes_say_what_happened(server: int) -> None:
    p = _run(server, "health")
    assert p.returncode == 0 and "/health: ok" in p.stdout, p.stdout + p.stderr
    p = _run(server, "abort-cascade", "--streams", "4", "--after", "2", "--output-len", "8")
    assert p.returncode == 0 and "4 streams opened, 4 cancelled after 2 tokens" in p.stdout, p.stdout + p.stderr
    p = _run(server, "burst", "--requests", "5", "--output-len", "3")
    assert p.returncode == 0 and "5 requests at once: 5 finished, 0 failed" in p.stdout, p.stdout + p.stderr


def test_no_server_is_one_clear_line_not_a_traceback(tmp_path: Path) -> None:
    p = subprocess.run(
        [sys.executable, str(LOADGEN), "health", "--port-file", str(tmp_path / "server.port")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert p.returncode == 2 and p.stderr.strip().count("\n") == 0 and "no port in" in p.stderr
    (tmp_path / "server.port").write_text("1\n")  # nothing listens on port 1
    p = subprocess.run(
        [sys.executable, str(LOADGEN), "health", "--port-file", str(tmp_path / "server.port")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert p.returncode == 1 and "Traceback" not in p.stderr and p.stderr.startswith("loadgen: health: ")
