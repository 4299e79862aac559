#!/usr/bin/python3
"""An independent fp32 reference forward for Hugging Face checkpoints --
the Llama family (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM,
Qwen3ForCausalLM, Qwen3MoeForCausalLM with its experts),
NemotronHForCausalLM (Mamba2 / attention / MLP / experts hybrid) and
NemotronForCausalLM (Nemotron-4, Minitron) -- written from transformers'
modeling code in plain PyTorch: no transformers, no safetensors package.

    /usr/bin/python3 tools/reference_forward.py MODEL_DIR --tokens 1,2,3 [--greedy N] [--out FILE]

Prints (or writes to FILE) JSON: {"tokens": [...], "vocab_size": V,
"logits": [[V floats] per token]} -- the logits of every position of one
causal forward over the tokens. With --greedy N it also generates N tokens
greedily after them, each by a full forward over everything so far (no
cache to get wrong), and adds "greedy": [N ids] and "gaps": [N floats], the
top-1 minus top-2 logit at each step, so a test can skip a near-tie.

Mamba2 layers run the token-by-token recurrence (the state carried from
every token to the next), not transformers' chunked scan, whose pure-torch
version drops the state between chunks in some releases. dt is clamped only
to the config's time_step_limit (default (0, inf)); transformers' pure-torch
path also clamps it below at time_step_min, so a warning goes to stderr if
any dt falls under that and the two readings would differ.

The mixture-of-experts layers, and the tie and summation order they fix,
are in tools/reference_moe.py.

tests/cpu uses it to make the committed fixtures
(tests/fixtures/reference_*.json, nemotron_oracle.jsonl, moe_oracle.jsonl) and, when torch is
importable, to re-check the C++ backend live.
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch

import reference_moe as moe


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


def layer_norm_1p(x, weight, bias, eps):
    # Nemotron's LayerNorm1P: the stored weight is an offset from a scale of 1.
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight + 1, bias, eps)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def linear(w, x, name):
    y = x @ w[name + ".weight"].T
    if name + ".bias" in w:
        y = y + w[name + ".bias"]
    return y


def causal_mask(T, window=None):
    mask = torch.full((T, T), float("-inf")).triu(1)
    if window:
        i = torch.arange(T)
        mask = mask.masked_fill((i[:, None] - i[None, :]) >= window, float("-inf"))
    return mask


def attend(q, k, v, mask, head_dim):
    """Softmax attention of q (T, heads, d) over k, v (T, kv_heads, d)."""
    T, n_heads, _ = q.shape
    group = n_heads // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    scores = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(head_dim) + mask
    probs = torch.softmax(scores, dim=-1)
    return torch.einsum("hqk,khd->qhd", probs, v).reshape(T, n_heads * head_dim)


def rope_tables(inv_freq, T):
    positions = torch.arange(T, dtype=torch.float32)
    freqs = positions[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def llama_forward(cfg, w, tokens):
    arch = cfg["architectures"][0]
    hidden = cfg["hidden_size"]
    n_heads = cfg["num_attention_heads"]
    n_kv = cfg.get("num_key_value_heads", n_heads)
    head_dim = cfg.get("head_dim") or hidden // n_heads
    eps = cfg.get("rms_norm_eps", 1e-6)
    qk_norm = arch in ("Qwen3ForCausalLM", "Qwen3MoeForCausalLM")
    sparse = moe.qwen3_moe_sparse_layers(cfg) if arch == "Qwen3MoeForCausalLM" else None
    window = cfg.get("sliding_window") if arch == "MistralForCausalLM" else None

    T = len(tokens)
    ids = torch.tensor(tokens, dtype=torch.int64)
    x = w["model.embed_tokens.weight"][ids]
    cos, sin = rope_tables(rope_inv_freq(cfg, head_dim), T)
    mask = causal_mask(T, window)

    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = linear(w, h, p + "self_attn.q_proj").view(T, n_heads, head_dim)
        k = linear(w, h, p + "self_attn.k_proj").view(T, n_kv, head_dim)
        v = linear(w, h, p + "self_attn.v_proj").view(T, n_kv, head_dim)
        if qk_norm:
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q = q * cos[:, None, :] + rotate_half(q) * sin[:, None, :]
        k = k * cos[:, None, :] + rotate_half(k) * sin[:, None, :]
        x = x + linear(w, attend(q, k, v, mask, head_dim), p + "self_attn.o_proj")
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        if sparse and sparse[layer]:
            x = x + moe.qwen3_moe_sparse(cfg, w, p + "mlp.", h)
            continue
        gate = linear(w, h, p + "mlp.gate_proj")
        up = linear(w, h, p + "mlp.up_proj")
        x = x + linear(w, torch.nn.functional.silu(gate) * up, p + "mlp.down_proj")
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings", False) else w["lm_head.weight"]
    return x @ head.T


def relu2_mlp(w, h, p):
    """down(relu(up(h))^2): Nemotron's ungated squared-ReLU MLP."""
    return linear(w, torch.relu(linear(w, h, p + "up_proj")).square(), p + "down_proj")


def nemotron_forward(cfg, w, tokens):
    hidden = cfg["hidden_size"]
    n_heads = cfg["num_attention_heads"]
    n_kv = cfg.get("num_key_value_heads") or n_heads
    head_dim = cfg.get("head_dim") or hidden // n_heads
    eps = cfg.get("norm_eps", 1e-5)
    # Only the first `rot` dims of each q/k head turn; the rest pass through.
    rot = int(cfg.get("partial_rotary_factor", 0.5) * head_dim)
    base = cfg.get("rope_theta", 10000.0)
    inv_freq = 1.0 / (base ** (torch.arange(0, rot, 2, dtype=torch.int64).float() / rot))

    T = len(tokens)
    x = w["model.embed_tokens.weight"][torch.tensor(tokens, dtype=torch.int64)]
    cos, sin = rope_tables(inv_freq, T)
    mask = causal_mask(T)

    def turn(t):
        part, rest = t[..., :rot], t[..., rot:]
        part = part * cos[:, None, :] + rotate_half(part) * sin[:, None, :]
        return torch.cat((part, rest), dim=-1)

    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        h = layer_norm_1p(x, w[p + "input_layernorm.weight"], w[p + "input_layernorm.bias"], eps)
        q = turn(linear(w, h, p + "self_attn.q_proj").view(T, n_heads, head_dim))
        k = turn(linear(w, h, p + "self_attn.k_proj").view(T, n_kv, head_dim))
        v = linear(w, h, p + "self_attn.v_proj").view(T, n_kv, head_dim)
        x = x + linear(w, attend(q, k, v, mask, head_dim), p + "self_attn.o_proj")
        h = layer_norm_1p(x, w[p + "post_attention_layernorm.weight"], w[p + "post_attention_layernorm.bias"], eps)
        x = x + relu2_mlp(w, h, p + "mlp.")
    x = layer_norm_1p(x, w["model.norm.weight"], w["model.norm.bias"], eps)
    head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings", False) else w["lm_head.weight"]
    return x @ head.T


def mamba2_mixer(cfg, w, p, h):
    """One Mamba2 mixer over h (T, hidden), token by token."""
    H, P = cfg["mamba_num_heads"], cfg["mamba_head_dim"]
    N, G, K = cfg["ssm_state_size"], cfg["n_groups"], cfg["conv_kernel"]
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    inner, gn = H * P, G * N
    T = h.shape[0]

    z, xbc, dt = torch.split(linear(w, h, p + "in_proj"), [inner, inner + 2 * gn, H], dim=-1)

    # Depthwise causal conv over time: output t sees inputs t-K+1 .. t, zeros before the start.
    kernel = w[p + "conv1d.weight"][:, 0, :]  # (channels, K)
    padded = torch.cat((torch.zeros(K - 1, xbc.shape[1]), xbc), dim=0)
    conv = torch.stack([(padded[t:t + K] * kernel.T).sum(0) for t in range(T)])
    if p + "conv1d.bias" in w:
        conv = conv + w[p + "conv1d.bias"]
    xs, B, C = torch.split(torch.nn.functional.silu(conv), [inner, gn, gn], dim=-1)

    dt = torch.nn.functional.softplus(dt + w[p + "dt_bias"])
    limit = cfg.get("time_step_limit")
    if limit is not None:
        dt = dt.clamp(min=limit[0], max=limit[1])
    floor = cfg.get("time_step_min", 0.001)
    if T and float(dt.min()) < floor:
        sys.stderr.write(f"reference_forward: {p}: dt {float(dt.min()):.3g} is under time_step_min {floor}; "
                         "transformers' pure-torch path would clamp it\n")
    A = -torch.exp(w[p + "A_log"])
    D = w[p + "D"]

    # Head j reads B and C of group j // (H / G).
    per_group = H // G
    state = torch.zeros(H, P, N)
    ys = []
    for t in range(T):
        x_t = xs[t].view(H, P)
        B_t = B[t].view(G, N).repeat_interleave(per_group, dim=0)
        C_t = C[t].view(G, N).repeat_interleave(per_group, dim=0)
        decay = torch.exp(dt[t] * A)
        state = state * decay[:, None, None] + (dt[t][:, None] * x_t)[:, :, None] * B_t[:, None, :]
        ys.append((state * C_t[:, None, :]).sum(-1) + D[:, None] * x_t)
    y = torch.stack(ys).reshape(T, inner) if ys else torch.zeros(0, inner)

    # Gated RMSNorm: gate first, then normalise each group of inner / G on its own.
    u = (y * torch.nn.functional.silu(z)).view(T, G, inner // G)
    u = u * torch.rsqrt(u.pow(2).mean(-1, keepdim=True) + eps)
    return linear(w, u.reshape(T, inner) * w[p + "norm.weight"], p + "out_proj")


def nemotron_h_forward(cfg, w, tokens):
    pattern = cfg["hybrid_override_pattern"]
    n_heads = cfg["num_attention_heads"]
    n_kv = cfg.get("num_key_value_heads") or n_heads
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // n_heads
    eps = cfg.get("layer_norm_epsilon", 1e-5)

    T = len(tokens)
    x = w["backbone.embeddings.weight"][torch.tensor(tokens, dtype=torch.int64)]
    mask = causal_mask(T)
    for layer, kind in enumerate(pattern):
        p = f"backbone.layers.{layer}."
        h = rms_norm(x, w[p + "norm.weight"], eps)
        if kind == "M":
            out = mamba2_mixer(cfg, w, p + "mixer.", h)
        elif kind == "*":
            # No rotary embedding: the Mamba2 layers carry position.
            q = linear(w, h, p + "mixer.q_proj").view(T, n_heads, head_dim)
            k = linear(w, h, p + "mixer.k_proj").view(T, n_kv, head_dim)
            v = linear(w, h, p + "mixer.v_proj").view(T, n_kv, head_dim)
            out = linear(w, attend(q, k, v, mask, head_dim), p + "mixer.o_proj")
        elif kind == "-":
            out = relu2_mlp(w, h, p + "mixer.")
        elif kind == "E":
            out = moe.nemotron_h_moe(cfg, w, p + "mixer.", h)
        else:
            raise SystemExit(f"layer {layer}: pattern character {kind!r} not handled")
        x = x + out
    x = rms_norm(x, w["backbone.norm_f.weight"], eps)
    head = w["backbone.embeddings.weight"] if cfg.get("tie_word_embeddings", False) else w["lm_head.weight"]
    return x @ head.T


FORWARDS = {
    "LlamaForCausalLM": llama_forward,
    "MistralForCausalLM": llama_forward,
    "Qwen2ForCausalLM": llama_forward,
    "Qwen3ForCausalLM": llama_forward,
    "Qwen3MoeForCausalLM": llama_forward,
    "NemotronHForCausalLM": nemotron_h_forward,
    "NemotronForCausalLM": nemotron_forward,
}


def load_model(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    arch = cfg["architectures"][0]
    if arch not in FORWARDS:
        raise SystemExit(f"{model_dir}: architecture {arch} not handled")
    return cfg, load_weights(model_dir)


def forward(cfg, w, tokens):
    """The logits (T, vocab) of every position of one causal forward."""
    return FORWARDS[cfg["architectures"][0]](cfg, w, tokens)


def greedy(cfg, w, tokens, steps):
    """steps argmax tokens after `tokens`, each from a fresh full forward,
    and the top-1 minus top-2 logit at each step."""
    sequence, picked, gaps = list(tokens), [], []
    for _ in range(steps):
        last = forward(cfg, w, sequence)[-1]
        top = torch.topk(last, 2)
        token = int(torch.argmax(last))  # the lowest id among equal maxima
        picked.append(token)
        gaps.append(float(top.values[0] - top.values[1]))
        sequence.append(token)
    return picked, gaps


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir")
    parser.add_argument("--tokens", required=True, help="comma-separated token ids")
    parser.add_argument("--greedy", type=int, default=0, metavar="N",
                        help="also generate N tokens greedily (full recomputation each step)")
    parser.add_argument("--out", help="write the JSON here instead of stdout")
    args = parser.parse_args()
    tokens = [int(t) for t in args.tokens.split(",") if t]
    torch.set_grad_enabled(False)
    cfg, w = load_model(args.model_dir)
    logits = forward(cfg, w, tokens)
    result = {"tokens": tokens, "vocab_size": logits.shape[-1],
              "logits": [[float(v) for v in row] for row in logits]}
    if args.greedy > 0:
        result["greedy"], result["gaps"] = greedy(cfg, w, tokens, args.greedy)
    text = json.dumps(result)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
