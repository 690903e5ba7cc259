#!/usr/bin/python3
"""Writes a seeded random Qwen2 model of a real size as a Hugging Face folder (config.json, safetensors shards
with an index, the tokenizer files copied), with torch alone (Debian's python3-torch works; no transformers),
for memory and speed measurements of the big shapes:
  7b:  the Qwen2.5-7B shape (hidden 3584, 28 layers, 28/4 heads, MLP 18944, vocab 152064, untied; 7.6B
       parameters, 15.2 GB in bf16), the shape the PyTorch peer's 7B model has (bench/RESULTS.md);
  14b: issue 23's 14B shape (hidden 5120, 48 layers, 40/8 heads, MLP 13824, vocab 152064, untied; 14.8B, 29.5 GB).
--layers N keeps the first N layers (a quicker model with the same per-layer sizes). --sparse writes the headers
and leaves the data as holes (files of the full size that take no disk and no time): enough for `lorastudio
--batch ... --plan`, which reads only config.json and the headers. Weights are normal with
std 0.02, biases 0, norms 1, in bf16; seeded, so the same on every machine (and device: --device cuda draws
them on the GPU, faster, with other values than the CPU's).
usage: bench/make_shape_model.py OUT TOKENIZER_DIR [--shape 7b|14b] [--layers N] [--device cpu|cuda] [--sparse]
"""
import argparse
import json
import os
import shutil
import struct

import torch

SHAPES = {
    "7b": dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
               num_key_value_heads=4),
    "14b": dict(hidden_size=5120, intermediate_size=13824, num_hidden_layers=48, num_attention_heads=40,
                num_key_value_heads=8),
}


def tensors(cfg, gen):
    C, I, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    D = C // cfg["num_attention_heads"]
    KV = cfg["num_key_value_heads"] * D
    dev = gen.device if gen is not None else None
    normal = lambda *shape: (torch.randn(*shape, generator=gen, device=dev) * 0.02).to(torch.bfloat16).cpu()
    ones = lambda n: torch.ones(n, dtype=torch.bfloat16)
    zeros = lambda n: torch.zeros(n, dtype=torch.bfloat16)
    if gen is None:  # --sparse: shapes only
        normal = ones = zeros = lambda *shape: torch.empty(*shape, dtype=torch.bfloat16, device="meta")
    yield "model.embed_tokens.weight", normal(V, C)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        yield p + "input_layernorm.weight", ones(C)
        yield p + "self_attn.q_proj.weight", normal(C, C)
        yield p + "self_attn.q_proj.bias", zeros(C)
        yield p + "self_attn.k_proj.weight", normal(KV, C)
        yield p + "self_attn.k_proj.bias", zeros(KV)
        yield p + "self_attn.v_proj.weight", normal(KV, C)
        yield p + "self_attn.v_proj.bias", zeros(KV)
        yield p + "self_attn.o_proj.weight", normal(C, C)
        yield p + "post_attention_layernorm.weight", ones(C)
        yield p + "mlp.gate_proj.weight", normal(I, C)
        yield p + "mlp.up_proj.weight", normal(I, C)
        yield p + "mlp.down_proj.weight", normal(C, I)
    yield "model.norm.weight", ones(C)
    yield "lm_head.weight", normal(V, C)


def write_shard(path, items, sparse=False):
    header, offset = {}, 0
    for name, t in items:
        n = t.numel() * 2
        header[name] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [offset, offset + n]}
        offset += n
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        if sparse:
            f.truncate(8 + len(h) + offset)
            return
        for _, t in items:
            f.write(t.contiguous().view(torch.int16).numpy().tobytes())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("tokenizer_dir")
    ap.add_argument("--shape", default="7b", choices=sorted(SHAPES))
    ap.add_argument("--layers", type=int, default=0)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--sparse", action="store_true", help="headers only, the data left as holes (for --plan)")
    a = ap.parse_args()
    cfg = dict(architectures=["Qwen2ForCausalLM"], model_type="qwen2", vocab_size=152064, hidden_act="silu",
               max_position_embeddings=32768, rope_theta=1e6, rms_norm_eps=1e-6, tie_word_embeddings=False,
               torch_dtype="bfloat16", bos_token_id=151643, eos_token_id=151645, **SHAPES[a.shape])
    if a.layers:
        cfg["num_hidden_layers"] = a.layers
    os.makedirs(a.out, exist_ok=True)
    gen = None if a.sparse else torch.Generator(device=a.device).manual_seed(0)
    shards, current, size, weight_map, total = [], [], 0, {}, 0
    for name, t in tensors(cfg, gen):
        current.append((name, t))
        size += t.numel() * 2
        total += t.numel()
        if size >= 4 << 30:
            shards.append(current)
            current, size = [], 0
    if current:
        shards.append(current)
    for k, items in enumerate(shards):
        fname = f"model-{k + 1:05d}-of-{len(shards):05d}.safetensors"
        write_shard(os.path.join(a.out, fname), items, a.sparse)
        for name, _ in items:
            weight_map[name] = fname
    with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total * 2}, "weight_map": weight_map}, f, indent=2)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(a.tokenizer_dir, name), a.out)
    print(f"wrote {a.out}: {total / 1e9:.3f}B parameters in {len(shards)} shards (bf16)")


if __name__ == "__main__":
    main()
