// A small trained Qwen3 model placed inside a larger Qwen3 shape, so that a
// benchmark pays the large shape's costs (every matmul, every KV head, every
// layer) while the text it writes is the trained model's. Random weights
// write runs of one token, which a stream's own drafts predict; real text
// does not, and Recall's speed-ups can only be measured on real text.
//
// What is zero and what is copied (the function stays the small model's, up
// to rounding):
//  - hidden dims [0, D_s) hold the small model's; the others stay zero in
//    the residual, because every matrix that writes to the residual (the
//    embedding, o_proj, down_proj) has zero rows there. RMSNorm weights are
//    scaled by sqrt(D_s / D_b), which undoes the mean over more dims.
//  - A q head of dim h_b holds a small head of dim h_s at the positions
//    whose RoPE frequency is the same: small dims i and i + h_s/2 (i <
//    h_s/2) sit at r*i and r*i + h_b/2, r = h_b / h_s; the rest are zero in
//    q, k and the norms. q_norm is scaled by 1 (its mean over more dims and
//    the attention scale 1/sqrt(h_b) cancel), k_norm by sqrt(h_s / h_b).
//  - A small kv head serves g_s q heads, a large one g_b: each small kv head
//    is copied into ceil(g_s / g_b) large ones, and its q heads spread over
//    them. o_proj reads only the q heads that hold a small one.
//  - The MLP's inner dims [0, I_s) are the small model's, layers [0, L_s)
//    too; the layers past L_s are all zero, so they add nothing to the
//    residual (but cost what a layer costs).
//  - Tokens past the small vocabulary must never win: hidden dim D_b - 1
//    carries a constant (kConstantChannel in the embedding of every real
//    token, no matrix writes or reads it but the final norm and the
//    embedding), and the tokens past the small vocabulary get a large
//    negative weight on it, so their logits sit far below every real one;
//    the real ones all move by the same amount, which changes no softmax.
//
// The small model's tensors are read once into fp32 (it is small).
#pragma once

#include <memory>
#include <string>

#include "model/checkpoint_writer.h"
#include "model/model_config.h"

namespace tf::model {

class EmbeddedWeights final : public WeightSource {
public:
    // Reads the small model. Throws std::invalid_argument naming what does
    // not fit: not Qwen3 on either side, a small dimension above the
    // large one (hidden must leave one dim spare when the vocabulary grows),
    // a head_dim that does not divide, or different rope_theta.
    EmbeddedWeights(const std::string& small_dir, const CheckpointSpec& large);
    ~EmbeddedWeights() override;

    const ModelConfig& small_config() const { return small_; }
    void fill(const TensorSpec& t, uint64_t begin, uint64_t end, float* out) const override;

private:
    struct Plan;
    ModelConfig small_;
    std::unique_ptr<const Plan> plan_;
};

// The large spec with what must follow the small model: its rope_theta,
// eos ids, positions and tied embeddings.
CheckpointSpec spec_for_embedding(const ModelConfig& small, CheckpointSpec large);

}  // namespace tf::model
