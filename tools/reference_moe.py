"""Mixture-of-experts layers for tools/reference_forward.py, in fp32 plain
PyTorch, written from the published architectures:

- Qwen3MoeForCausalLM's sparse MLP (transformers' modeling_qwen3_moe.py):
  a softmax router over every expert, the top k, optionally renormalised,
  SwiGLU experts.
- NemotronHForCausalLM's E layers (transformers' modeling_nemotron_h.py,
  NemotronHMoE): a sigmoid router whose choice adds e_score_correction_bias
  and is limited to the best groups, weights from the unbiased scores,
  relu2 experts without a gate, optionally inside a latent width, plus an
  always-on relu2 shared expert on the layer's input.

Both the per-expert tensors (mlp.experts.{e}.{gate,up,down}_proj.weight,
mixer.experts.{e}.{up,down}_proj.weight) and the fused ones transformers 5
keeps (mlp.experts.gate_up_proj [E, 2I, H], gate rows first, and
mlp.experts.down_proj [E, H, I]; mixer.experts.up_proj [E, I, D] and
mixer.experts.down_proj [E, D, I]) are read.

Choices the published code leaves open are fixed here, the same ones the C++
engine makes (a tie broken the other way picks another expert):
- top-k ties go to the lower expert index (torch.topk promises no order
  among equal values);
- a token's experts are added in ascending expert index, starting from zero,
  whatever order the router ranked them in (transformers' loop over experts
  does the same; llama.cpp adds them in rank order instead).
"""
import numpy as np
import torch


def best_lowest_index(row, k):
    """The indices of the k largest entries of the 1-d array `row`, a tie
    going to the lower index, in ascending index order. -inf entries are
    never better than finite ones and are chosen only if k demands it."""
    # lexsort's last key is the primary one: larger value first, then lower index.
    order = np.lexsort((np.arange(len(row)), -row))
    return sorted(int(e) for e in order[:k])


def top_k_lowest_index(scores, k):
    """best_lowest_index over each row of `scores` (T, E), as a (T, k) tensor."""
    values = scores.detach().numpy()
    chosen = [best_lowest_index(row, k) for row in values]
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


def group_limited_top_k(choice, groups, top_groups, k):
    """NemotronH's (and DeepSeek-V3's) choice over `choice` (T, E), the
    biased scores: rank the `groups` consecutive groups of E / groups experts
    by the sum of their two best scores, keep the `top_groups` best, then
    take the k best experts inside them. Ties to the lower group, then the
    lower expert index. Returns (T, k) indices in ascending order."""
    values = choice.detach().numpy()
    T, E = values.shape
    size = E // groups
    chosen = []
    for row in values:
        grouped = row.reshape(groups, size)
        best_two = -np.sort(-grouped, axis=1)[:, :2]
        group_scores = (best_two[:, 0] + best_two[:, 1]).astype(np.float32)
        kept = best_lowest_index(group_scores, top_groups)
        masked = np.full(E, -np.inf, dtype=np.float32)
        for g in kept:
            masked[g * size:(g + 1) * size] = grouped[g]
        chosen.append(best_lowest_index(masked, k))
    return torch.tensor(chosen, dtype=torch.int64).reshape(T, k)


def nemotron_h_route(cfg, w, mixer, h):
    """(chosen (T, k), weights (T, k)) of NemotronH's sigmoid router."""
    logits = h.float() @ w[mixer + "gate.weight"].float().T
    scores = torch.sigmoid(logits)
    # The bias steers the choice only; the weights come from the plain scores.
    choice = scores + w[mixer + "gate.e_score_correction_bias"].float()
    chosen = group_limited_top_k(choice, cfg.get("n_group", 1), cfg.get("topk_group", 1), cfg["num_experts_per_tok"])
    weights = scores.gather(1, chosen)
    if cfg.get("norm_topk_prob", True):
        weights = weights / (weights.sum(-1, keepdim=True) + 1e-20)
    return chosen, weights * cfg.get("routed_scaling_factor", 1.0)


def relu2(x, up, down):
    return torch.relu(x @ up.T).square() @ down.T


def nemotron_h_moe(cfg, w, mixer, h):
    """One NemotronH E layer's mixer over h (T, hidden), the block's normed
    input; mixer: "backbone.layers.{i}.mixer."."""
    chosen, weights = nemotron_h_route(cfg, w, mixer, h)
    latent = cfg.get("moe_latent_size")
    # The routed experts work in the latent width when there is one: the
    # input projected down once, their weighted sum projected back up once.
    x = h @ w[mixer + "fc1_latent_proj.weight"].T if latent else h

    def expert(e, rows):
        if mixer + "experts.up_proj" in w:
            up, down = w[mixer + "experts.up_proj"][e], w[mixer + "experts.down_proj"][e]
        else:
            p = f"{mixer}experts.{e}."
            up, down = w[p + "up_proj.weight"], w[p + "down_proj.weight"]
        return relu2(x[rows], up, down)

    routed = combine(x, chosen, weights, expert)
    if latent:
        routed = routed @ w[mixer + "fc2_latent_proj.weight"].T
    shared = relu2(h, w[mixer + "shared_experts.up_proj.weight"], w[mixer + "shared_experts.down_proj.weight"])
    return routed + shared
