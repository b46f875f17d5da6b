"""loadgen.py — a streaming load client for llama-server's OpenAI-compatible API, writing the JSON of
`vllm bench serve --save-result`, so that signoff's `vllm-json` parser reads real measurements.

Fixed concurrency, fixed output length (`ignore_eos`), per-request TTFT and inter-token latencies, and
every failed request counted with its error text. Standard library only (asyncio streams, no aiohttp): it
runs on any host with Python 3.8 or newer, beside the server it measures.

    python3 loadgen.py bench --port-file server.port --concurrency 8 --num-prompts 32 --output-len 32
    python3 loadgen.py abort-cascade --port-file server.port --streams 16 --after 4   # cancel streams mid-way
    python3 loadgen.py burst --port-file server.port --requests 32                   # all at once
    python3 loadgen.py health --port-file server.port                                # /health + 1 token

`bench` prints the result as the last line of its output (and to --result FILE); the others print a line
per step and exit 1 when the server failed them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import resource
import sys
import time
from datetime import datetime, timezone
from typing import Any

# Prompts are drawn from these words (about a token each in llama's vocabulary).
WORDS = (
    "the",
    "server",
    "decodes",
    "one",
    "token",
    "per",
    "step",
    "for",
    "every",
    "request",
    "in",
    "its",
    "batch",
    "and",
    "client",
    "reads",
    "each",
    "as",
    "an",
    "event",
    "of",
    "stream",
    "while",
    "next",
    "runs",
    "on",
    "same",
    "cores",
    "with",
    "weights",
)


class RequestFailed(Exception):
    """The server answered with an error, cut the stream, or sent fewer tokens than were asked for."""


def prompt(i: int, words: int, seed: int) -> str:
    rng = random.Random(seed * 100_003 + i)  # a different prompt per request: no prefix-cache reuse
    return f"Request {i}: " + " ".join(rng.choice(WORDS) for _ in range(words))


async def _http(
    host: str, port: int, method: str, path: str, body: dict[str, Any] | None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, int, dict[str, str]]:
    reader, writer = await asyncio.open_connection(host, port, limit=1 << 20)
    payload = json.dumps(body).encode() if body is not None else b""
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
    )
    writer.write(head.encode() + payload)
    await writer.drain()
    status_line = (await reader.readline()).decode("latin-1").strip()
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        raise RequestFailed(f"not an HTTP response: {status_line[:80]!r}")
    headers: dict[str, str] = {}
    while True:
        line = (await reader.readline()).decode("latin-1")
        if line in ("\r\n", "\n", ""):
            break
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return reader, writer, int(parts[1]), headers


async def _body_chunks(reader: asyncio.StreamReader, headers: dict[str, str]):
    """The response body as it arrives, chunked transfer encoding undone."""
    if "chunked" in headers.get("transfer-encoding", ""):
        while True:
            size_line = await reader.readline()
            if not size_line:
                raise RequestFailed("the stream ended inside a chunk header")
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                return
            chunk = await reader.readexactly(size)
            await reader.readexactly(2)
            yield chunk
    elif "content-length" in headers:
        yield await reader.readexactly(int(headers["content-length"]))
    else:
        while chunk := await reader.read(65536):
            yield chunk


async def complete(
    host: str, port: int, text: str, tokens: int, stop_after: int | None = None
) -> tuple[float, list[float], int, float]:
    """One streamed completion: (ttft s, inter-token gaps s, output tokens, end-to-end s).

    With `stop_after`, the connection is closed after that many tokens, as a client that gives up does."""
    start = time.perf_counter()
    body = {
        "prompt": text,
        "max_tokens": tokens,
        "ignore_eos": True,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    reader, writer, status, headers = await _http(host, port, "POST", "/v1/completions", body)
    try:
        if status != 200:
            raw = b"".join([c async for c in _body_chunks(reader, headers)])
            raise RequestFailed(f"HTTP {status}: {raw.decode('utf-8', 'replace')[:200]}")
        stamps: list[float] = []
        usage: int | None = None
        done = False
        pending = b""
        async for chunk in _body_chunks(reader, headers):
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                line = line.strip()
                if not line.startswith(b"data:"):
                    continue
                data = line[5:].strip()
                if data == b"[DONE]":
                    done = True
                    continue
                try:
                    event = json.loads(data)
                except ValueError as exc:
                    raise RequestFailed(f"unreadable stream event: {data[:80]!r}") from exc
                if "error" in event:
                    raise RequestFailed(f"error event: {json.dumps(event['error'])[:200]}")
                if event.get("usage"):
                    usage = int(event["usage"].get("completion_tokens", 0))
                choices = event.get("choices") or []
                if choices and choices[0].get("text"):
                    stamps.append(time.perf_counter())
                    if stop_after is not None and len(stamps) >= stop_after:
                        return stamps[0] - start, [], len(stamps), time.perf_counter() - start
        end = time.perf_counter()
        if not stamps:
            raise RequestFailed("the stream ended without a token")
        produced = usage if usage is not None else len(stamps)
        if not done:
            raise RequestFailed(f"the stream ended without [DONE] after {produced} tokens")
        if produced != tokens:
            raise RequestFailed(f"{produced} of {tokens} output tokens")
        gaps = [b - a for a, b in zip(stamps, stamps[1:])]  # noqa: B905, RUF007 (Python 3.8 hosts)
        return stamps[0] - start, gaps, produced, end - start
    finally:
        writer.close()


def percentile(values: list[float], p: float) -> float:
    """Linear interpolation between closest ranks, as numpy.percentile (and so vLLM) computes it."""
    s = sorted(values)
    if not s:
        return 0.0
    k = (len(s) - 1) * p / 100
    lo, hi = math.floor(k), math.ceil(k)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def stats(name: str, values_s: list[float]) -> dict[str, float]:
    ms = [v * 1000 for v in values_s]
    mean = sum(ms) / len(ms) if ms else 0.0
    std = math.sqrt(sum((v - mean) ** 2 for v in ms) / len(ms)) if ms else 0.0
    out = {f"mean_{name}_ms": mean, f"median_{name}_ms": percentile(ms, 50), f"std_{name}_ms": std}
    for p in (50, 90, 95, 99):
        out[f"p{p}_{name}_ms"] = percentile(ms, p)
    return out


async def bench(a: argparse.Namespace, port: int) -> dict[str, Any]:
    if a.warmup:  # page in the weights and fill the slots once, unmeasured
        await asyncio.gather(
            *(complete(a.host, port, prompt(-1 - i, 8, a.seed), 2) for i in range(a.concurrency)),
            return_exceptions=True,
        )
    n = a.num_prompts
    ttfts, itls, out_lens, in_lens, e2els, tpots = [0.0] * n, [[] for _ in range(n)], [0] * n, [0] * n, [], []
    errors = [""] * n
    queue = iter(range(n))
    started = time.perf_counter()
    cpu = resource.getrusage(resource.RUSAGE_SELF)

    async def worker() -> None:
        for i in queue:
            text = prompt(i, a.input_len, a.seed)
            in_lens[i] = len(text.split())
            try:
                ttft, gaps, produced, e2e = await asyncio.wait_for(
                    complete(a.host, port, text, a.output_len), a.request_timeout
                )
            except asyncio.TimeoutError:  # noqa: UP041 (not the builtin before Python 3.11)
                errors[i] = f"no answer within {a.request_timeout:g} s"
                continue
            except (RequestFailed, OSError, asyncio.IncompleteReadError, ValueError) as exc:
                errors[i] = f"{type(exc).__name__}: {exc}" if not isinstance(exc, RequestFailed) else str(exc)
                continue
            ttfts[i], itls[i], out_lens[i] = ttft, gaps, produced
            e2els.append(e2e)
            if produced > 1:
                tpots.append((e2e - ttft) / (produced - 1))

    await asyncio.gather(*(worker() for _ in range(a.concurrency)))
    duration = time.perf_counter() - started
    now = resource.getrusage(resource.RUSAGE_SELF)
    client_cpu = (now.ru_utime - cpu.ru_utime) + (now.ru_stime - cpu.ru_stime)
    ok = [i for i in range(n) if not errors[i]]
    total_out = sum(out_lens[i] for i in ok)
    total_in = sum(in_lens[i] for i in ok)
    result: dict[str, Any] = {
        "date": datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S"),  # noqa: UP017 (datetime.UTC is 3.11+)
        "backend": "openai",
        "endpoint_type": "openai",
        "label": "signoff-loadgen",
        "model_id": a.model,
        "num_prompts": n,
        "request_rate": "inf",
        "burstiness": 1.0,
        "max_concurrency": a.concurrency,
        "duration": duration,
        "completed": len(ok),
        "failed": n - len(ok),
        "total_input_tokens": total_in,
        "total_output_tokens": total_out,
        "request_throughput": len(ok) / duration,
        "request_goodput": None,
        "output_throughput": total_out / duration,
        "total_token_throughput": (total_in + total_out) / duration,
        **stats("ttft", [ttfts[i] for i in ok]),
        **stats("tpot", tpots),
        **stats("itl", [g for i in ok for g in itls[i]]),
        **stats("e2el", e2els),
        # Not vLLM's: the CPU this client spent, so the sizing check can tell the server's cost from its own.
        "client_cpu_s": client_cpu,
        "input_lens": in_lens,
        "output_lens": out_lens,
        "ttfts": ttfts,
        "itls": itls,
        "errors": errors,
    }
    return result


async def abort_cascade(a: argparse.Namespace, port: int) -> int:
    """Streams cancelled mid-way, all at once; then the server must still answer."""
    texts = [prompt(10_000 + i, a.input_len, a.seed) for i in range(a.streams)]
    got = await asyncio.gather(
        *(complete(a.host, port, t, a.output_len, stop_after=a.after) for t in texts), return_exceptions=True
    )
    cut = sum(1 for g in got if not isinstance(g, BaseException))
    print(f"{a.streams} streams opened, {cut} cancelled after {a.after} tokens", flush=True)
    for g in got:
        if isinstance(g, BaseException):
            print(f"stream failed before its cancel: {g}", flush=True)
    return await health(a, port)


async def burst(a: argparse.Namespace, port: int) -> int:
    """More requests at once than the server has slots: the rest must queue and finish, not be dropped."""
    got = await asyncio.gather(
        *(complete(a.host, port, prompt(20_000 + i, a.input_len, a.seed), a.output_len) for i in range(a.requests)),
        return_exceptions=True,
    )
    failed = [g for g in got if isinstance(g, BaseException)]
    print(f"{a.requests} requests at once: {a.requests - len(failed)} finished, {len(failed)} failed", flush=True)
    for g in failed[:3]:
        print(f"  {type(g).__name__}: {g}", flush=True)
    return 1 if failed else await health(a, port)


async def health(a: argparse.Namespace, port: int) -> int:
    reader, writer, status, headers = await _http(a.host, port, "GET", "/health", None)
    raw = b"".join([c async for c in _body_chunks(reader, headers)])
    writer.close()
    if status != 200:
        print(f"/health: HTTP {status} {raw.decode('utf-8', 'replace')[:120]}", flush=True)
        return 1
    *_, e2e = await complete(a.host, port, "health", 1)
    print(f"/health: ok; a 1-token completion in {e2e * 1000:.0f} ms", flush=True)
    return 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=["bench", "abort-cascade", "burst", "health"])
    p.add_argument("--host", default="127.0.0.1")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--port", type=int)
    where.add_argument("--port-file", help="a file holding the port (llamactl.sh writes server.port)")
    p.add_argument("--model", default="tiny-llama")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--num-prompts", type=int, default=32)
    p.add_argument("--input-len", type=int, default=24, help="prompt length in words (~tokens)")
    p.add_argument("--output-len", type=int, default=32)
    p.add_argument("--request-timeout", type=float, default=60.0)
    p.add_argument("--warmup", type=int, default=1, help="1: one unmeasured short request per slot first")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--streams", type=int, default=16)
    p.add_argument("--after", type=int, default=4)
    p.add_argument("--requests", type=int, default=32)
    p.add_argument("--result", help="also write the JSON result to this file")
    a = p.parse_args(argv)
    if a.port is None:
        try:
            with open(a.port_file) as f:
                a.port = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            print(f"loadgen: no port in {a.port_file} (is the server started?)", file=sys.stderr)
            return 2
    try:
        if a.mode == "bench":
            result = asyncio.run(bench(a, a.port))
            line = json.dumps(result)
            if a.result:
                with open(a.result, "w") as f:
                    f.write(line + "\n")
            failures = [e for e in result["errors"] if e]
            print(
                f"{result['completed']} of {a.num_prompts} requests at concurrency {a.concurrency}: "
                f"{result['output_throughput']:.1f} output tok/s, p99 TPOT {result['p99_tpot_ms']:.1f} ms"
                + (f"; {len(failures)} failed, first: {failures[0]}" if failures else ""),
                file=sys.stderr,
            )
            print(line)
            return 0
        return asyncio.run({"abort-cascade": abort_cascade, "burst": burst, "health": health}[a.mode](a, a.port))
    except (OSError, RequestFailed, asyncio.IncompleteReadError) as exc:
        print(f"loadgen: {a.mode}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
