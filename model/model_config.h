// ModelConfig: the architecture description read from a Hugging Face
// directory's config.json and generation_config.json. Plain data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tf::model {

struct ModelConfig {
    std::string architecture;  // e.g. "Qwen3ForCausalLM"
    int32_t vocab_size = 0;
    int32_t max_position_embeddings = 0;
    std::vector<int32_t> eos_token_ids;  // generation_config.json, else config.json
    // The loader (model/) adds every further field it needs here.
};

}  // namespace tf::model
