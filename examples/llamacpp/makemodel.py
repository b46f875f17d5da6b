"""A random-weight llama model in GGUF, with llama.cpp's real 32,000-token SentencePiece vocabulary.

Garbage text, real compute: every decode step reads every weight, as a trained model's does, so the
server's options (slots, threads, batch sizes, flash attention, KV-cache types) change what it costs. The
default size makes decode dominate the client's share of a request (see the README's sizing check).
Needs numpy and llama.cpp's own `gguf` package (build.sh puts both on the path).

    python makemodel.py --vocab ggml-vocab-llama-spm.gguf --out tiny-llama.gguf [--layers 8 --hidden 768]
"""

from __future__ import annotations

import argparse
import sys

import gguf  # pyright: ignore[reportMissingImports]  # llama.cpp's gguf-py, from the vendored source
import numpy as np


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vocab", required=True, help="a GGUF holding only a tokenizer (llama.cpp models/ggml-vocab-*)")
    p.add_argument("--out", required=True)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--kv-heads", type=int, default=4)
    p.add_argument("--ff", type=int, default=2048)
    p.add_argument("--context", type=int, default=4096)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)

    reader = gguf.GGUFReader(a.vocab)
    tokens = reader.get_field("tokenizer.ggml.tokens")
    if tokens is None:
        print(f"makemodel: {a.vocab} has no tokenizer.ggml.tokens", file=sys.stderr)
        return 1
    n_vocab = len(tokens.data)

    w = gguf.GGUFWriter(a.out, "llama")
    w.add_name("signoff tiny llama (random weights)")
    w.add_context_length(a.context)
    w.add_embedding_length(a.hidden)
    w.add_block_count(a.layers)
    w.add_feed_forward_length(a.ff)
    w.add_head_count(a.heads)
    w.add_head_count_kv(a.kv_heads)
    w.add_rope_dimension_count(a.hidden // a.heads)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(n_vocab)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    for field in reader.fields.values():
        if not field.name.startswith("tokenizer."):
            continue
        kind = field.types[0]
        sub = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(field.name, field.contents(), kind, sub_type=sub)

    rng = np.random.default_rng(a.seed)
    head = a.hidden // a.heads

    def weight(rows: int, cols: int) -> np.ndarray:
        # Scaled so that activations stay O(1) through the layers: no inf/NaN in f16.
        return (rng.standard_normal((rows, cols), dtype=np.float32) / np.sqrt(cols)).astype(np.float16)

    def ones(n: int) -> np.ndarray:
        return np.ones(n, dtype=np.float32)

    w.add_tensor("token_embd.weight", weight(n_vocab, a.hidden))
    for i in range(a.layers):
        b = f"blk.{i}"
        w.add_tensor(f"{b}.attn_norm.weight", ones(a.hidden))
        w.add_tensor(f"{b}.attn_q.weight", weight(a.hidden, a.hidden))
        w.add_tensor(f"{b}.attn_k.weight", weight(a.kv_heads * head, a.hidden))
        w.add_tensor(f"{b}.attn_v.weight", weight(a.kv_heads * head, a.hidden))
        w.add_tensor(f"{b}.attn_output.weight", weight(a.hidden, a.hidden))
        w.add_tensor(f"{b}.ffn_norm.weight", ones(a.hidden))
        w.add_tensor(f"{b}.ffn_gate.weight", weight(a.ff, a.hidden))
        w.add_tensor(f"{b}.ffn_up.weight", weight(a.ff, a.hidden))
        w.add_tensor(f"{b}.ffn_down.weight", weight(a.hidden, a.ff))
    w.add_tensor("output_norm.weight", ones(a.hidden))
    w.add_tensor("output.weight", weight(n_vocab, a.hidden))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
