#include "model/rope.h"

#include <cmath>

namespace tf::model {

std::vector<float> rope_inv_freq(const ModelConfig& config) {
    const int32_t dim = config.rope_dim();  // Nemotron turns only part of each head; NemotronH none
    std::vector<float> inv_freq(dim / 2);
    const auto base = static_cast<float>(config.rope_theta);
    for (int32_t i = 0; i < dim / 2; ++i) {
        // transformers: 1.0 / (base ** (arange(0, dim, 2).float() / dim)), all fp32.
        const float exponent = static_cast<float>(2 * i) / static_cast<float>(dim);
        const auto power = static_cast<float>(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
        inv_freq[i] = 1.0f / power;
    }
    const Llama3RopeScaling& s = config.rope_scaling;
    if (s.enabled) {
        // transformers _compute_llama3_parameters.
        const double old_context = s.original_max_position_embeddings;
        const double low_freq_wavelen = old_context / s.low_freq_factor;
        const double high_freq_wavelen = old_context / s.high_freq_factor;
        for (float& f : inv_freq) {
            const double wavelen = 2.0 * M_PI / f;
            if (wavelen > low_freq_wavelen) {
                f = static_cast<float>(f / s.factor);
            } else if (wavelen >= high_freq_wavelen) {
                const double smooth = (old_context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
                f = static_cast<float>((1.0 - smooth) * f / s.factor + smooth * f);
            }
        }
    }
    return inv_freq;
}

}  // namespace tf::model
