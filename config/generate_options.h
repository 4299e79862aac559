// GenerateOptions: what `tensorfold generate` was asked to do. Plain data,
// filled by parse_command_line (config/command_line.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tf::config {

struct GenerateOptions {
    std::string model_dir;            // resolved: MODEL, else the embedded models/tinycode
    std::vector<int32_t> prompt_ids;  // --prompt-ids 1,2,3 (non-empty), or empty with --prompt
    std::string prompt_text;          // --prompt TEXT: encoded with the model's tokenizer; prints text
    int32_t max_tokens = 16;          // --max-tokens: most ids generated
    double temperature = 0.0;         // --temperature: 0 = greedy (argmax, lowest id on ties)
    double top_p = 1.0;               // --top-p: nucleus cut, (0, 1]
    uint64_t seed = 0;                // --seed: the counter-based sampler's seed
    int threads = 0;                  // --threads: CPU threads (0: every core)
    std::string quantize;             // --quantize: q8_0, q4_0, q4_k or q6_k; empty: the checkpoint's precision
    std::string kv_type;              // --kv-type: f32, f16, bf16 or q8_0; empty: the backend's default (f16)
    bool ignore_eos = false;          // --ignore-eos: do not stop at the model's EOS ids
    bool json = false;                // --json: print {"ids": [...]}
    bool timings = false;             // --timings: load, prompt and decode speed on stderr
};

// "1,2,3" -> {1, 2, 3}. Returns an empty string when valid, else the reason.
std::string parse_token_ids(const std::string& text, std::vector<int32_t>& ids);

}  // namespace tf::config
