#!/usr/bin/python3
"""An independent fp32 reference forward for Hugging Face Llama-family
checkpoints (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM,
Qwen3ForCausalLM), written from transformers' modeling code in plain
PyTorch: no transformers, no safetensors package needed.

    /usr/bin/python3 tools/reference_forward.py MODEL_DIR --tokens 1,2,3 [--out FILE]

Prints (or writes to FILE) JSON: {"tokens": [...], "vocab_size": V,
"logits": [[V floats] per token]} -- the logits of every position of one
causal forward over the tokens. tests/model uses it to make the committed
fixtures (tests/fixtures/reference_*.json) and, when torch is importable,
to re-check the C++ backend live.
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch


def load_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = data[base + begin:base + end]
        shape = entry["shape"]
        dtype = entry["dtype"]
        if dtype == "BF16":
            bits = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
            array = bits.view(np.float32)
        elif dtype == "F16":
            array = np.frombuffer(raw, dtype=np.float16).astype(np.float32)
        elif dtype == "F32":
            array = np.frombuffer(raw, dtype=np.float32).copy()
        else:
            raise SystemExit(f"{path}: tensor {name}: dtype {dtype} not handled")
        tensors[name] = torch.from_numpy(array.reshape(shape).copy())
    return tensors


def load_weights(model_dir):
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            shards = sorted(set(json.load(f)["weight_map"].values()))
        tensors = {}
        for shard in shards:
            tensors.update(load_safetensors(os.path.join(model_dir, shard)))
        return tensors
    return load_safetensors(os.path.join(model_dir, "model.safetensors"))


def rope_inv_freq(cfg, head_dim):
    params = cfg.get("rope_parameters") or {}
    base = cfg.get("rope_theta", params.get("rope_theta", 10000.0))
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    scaling = cfg.get("rope_scaling") or (params if params.get("rope_type", "default") != "default" else None)
    if scaling and scaling.get("rope_type", scaling.get("type")) == "llama3":
        factor = scaling["factor"]
        low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old / low, old / high
        wavelen = 2 * math.pi / inv_freq
        llama = torch.where(wavelen > low_wavelen, inv_freq / factor, inv_freq)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * llama / factor + smooth * llama
        medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
        inv_freq = torch.where(medium, smoothed, llama)
    return inv_freq


def rms_norm(x, weight, eps):
    variance = x.pow(2).mean(-1, keepdim=True)
    return weight * (x * torch.rsqrt(variance + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def forward(model_dir, tokens):
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    arch = cfg["architectures"][0]
    w = load_weights(model_dir)
    hidden = cfg["hidden_size"]
    n_heads = cfg["num_attention_heads"]
    n_kv = cfg.get("num_key_value_heads", n_heads)
    head_dim = cfg.get("head_dim") or hidden // n_heads
    eps = cfg.get("rms_norm_eps", 1e-6)
    qk_norm = arch == "Qwen3ForCausalLM"
    window = cfg.get("sliding_window") if arch == "MistralForCausalLM" else None

    T = len(tokens)
    ids = torch.tensor(tokens, dtype=torch.int64)
    x = w["model.embed_tokens.weight"][ids]
    inv_freq = rope_inv_freq(cfg, head_dim)
    positions = torch.arange(T, dtype=torch.float32)
    freqs = positions[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()

    mask = torch.full((T, T), float("-inf")).triu(1)
    if window:
        i = torch.arange(T)
        mask = mask.masked_fill((i[:, None] - i[None, :]) >= window, float("-inf"))

    def linear(x, name):
        y = x @ w[name + ".weight"].T
        if name + ".bias" in w:
            y = y + w[name + ".bias"]
        return y

    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = linear(h, p + "self_attn.q_proj").view(T, n_heads, head_dim)
        k = linear(h, p + "self_attn.k_proj").view(T, n_kv, head_dim)
        v = linear(h, p + "self_attn.v_proj").view(T, n_kv, head_dim)
        if qk_norm:
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q = q * cos[:, None, :] + rotate_half(q) * sin[:, None, :]
        k = k * cos[:, None, :] + rotate_half(k) * sin[:, None, :]
        group = n_heads // n_kv
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        scores = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(head_dim) + mask
        probs = torch.softmax(scores, dim=-1)
        attn = torch.einsum("hqk,khd->qhd", probs, v).reshape(T, n_heads * head_dim)
        x = x + linear(attn, p + "self_attn.o_proj")
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate = linear(h, p + "mlp.gate_proj")
        up = linear(h, p + "mlp.up_proj")
        x = x + linear(torch.nn.functional.silu(gate) * up, p + "mlp.down_proj")
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings", False) else w["lm_head.weight"]
    return x @ head.T


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir")
    parser.add_argument("--tokens", required=True, help="comma-separated token ids")
    parser.add_argument("--out", help="write the JSON here instead of stdout")
    args = parser.parse_args()
    tokens = [int(t) for t in args.tokens.split(",") if t]
    torch.set_grad_enabled(False)
    logits = forward(args.model_dir, tokens)
    result = {"tokens": tokens, "vocab_size": logits.shape[-1],
              "logits": [[float(v) for v in row] for row in logits]}
    text = json.dumps(result)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
