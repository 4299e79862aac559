"""Mixture-of-experts layers for tools/reference_forward.py, in fp32 plain
PyTorch, written from the published architectures:

- Qwen3MoeForCausalLM's sparse MLP (transformers' modeling_qwen3_moe.py):
  a softmax router over every expert, the top k, optionally renormalised,
  SwiGLU experts.

Both the per-expert tensors (mlp.experts.{e}.{gate,up,down}_proj.weight) and
the fused ones transformers 5 keeps (mlp.experts.gate_up_proj [E, 2I, H],
gate rows first, and mlp.experts.down_proj [E, H, I]) are read.

Choices the published code leaves to the backend are fixed here, because the
C++ engine has to make the same ones to agree bit for bit in its own tests:
- top-k ties go to the lower expert index (torch.topk promises no order
  among equal values);
- a token's experts are added in ascending expert index, starting from zero,
  whatever order the router ranked them in.
"""
import numpy as np
import torch


def top_k_lowest_index(scores, k):
    """The indices of the k largest entries of each row of `scores` (T, E),
    a tie going to the lower index, listed in ascending index order."""
    values = scores.detach().numpy()
    columns = np.arange(values.shape[1])
    chosen = []
    for row in values:
        # lexsort's last key is the primary one: larger score first, then lower index.
        order = np.lexsort((columns, -row))
        chosen.append(sorted(int(e) for e in order[:k]))
    return torch.tensor(chosen, dtype=torch.int64).reshape(values.shape[0], k)


def expert_matrices(w, mlp, expert, inter):
    """(gate, up, down) of one SwiGLU expert under `mlp` ("...mlp."), from
    either layout."""
    fused = mlp + "experts.gate_up_proj"
    if fused in w:
        gate_up = w[fused][expert]
        if gate_up.shape[0] != 2 * inter:
            raise SystemExit(f"{fused}: {gate_up.shape[0]} rows per expert, expected 2 x {inter}")
        return gate_up[:inter], gate_up[inter:], w[mlp + "experts.down_proj"][expert]
    p = f"{mlp}experts.{expert}."
    return w[p + "gate_proj.weight"], w[p + "up_proj.weight"], w[p + "down_proj.weight"]


def combine(h, chosen, weights, expert_out):
    """sum over each row's chosen experts, in ascending expert index, of
    weight * expert_out(e, rows). chosen and weights: (T, k), chosen sorted
    ascending in each row."""
    out = torch.zeros_like(h)
    for e in sorted(set(int(v) for v in chosen.flatten())):
        # Going through the experts in ascending order adds each row's terms
        # in ascending order too: a row meets its experts one by one.
        rows, slot = (chosen == e).nonzero(as_tuple=True)
        out[rows] += weights[rows, slot][:, None] * expert_out(e, rows)
    return out


def qwen3_moe_sparse(cfg, w, mlp, h):
    """Qwen3-MoE's sparse MLP over h (T, hidden); mlp: "model.layers.{i}.mlp."."""
    k = cfg["num_experts_per_tok"]
    inter = cfg["moe_intermediate_size"]
    logits = h.float() @ w[mlp + "gate.weight"].float().T
    probs = torch.softmax(logits, dim=-1)
    chosen = top_k_lowest_index(probs, k)
    weights = probs.gather(1, chosen)
    if cfg.get("norm_topk_prob", False):
        weights = weights / weights.sum(-1, keepdim=True)

    def swiglu(e, rows):
        gate, up, down = expert_matrices(w, mlp, e, inter)
        x = h[rows]
        return (torch.nn.functional.silu(x @ gate.T) * (x @ up.T)) @ down.T

    return combine(h, chosen, weights, swiglu)


def qwen3_moe_sparse_layers(cfg):
    """Per layer, whether its MLP is the experts: not listed in
    mlp_only_layers and (i + 1) a multiple of decoder_sparse_step, as
    transformers' Qwen3MoeDecoderLayer decides."""
    dense = set(cfg.get("mlp_only_layers") or [])
    step = cfg.get("decoder_sparse_step", 1)
    experts = cfg.get("num_experts", 0)
    return [i not in dense and experts > 0 and (i + 1) % step == 0 for i in range(cfg["num_hidden_layers"])]
