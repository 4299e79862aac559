// `tensorfold generate`: plain decode of one prompt of token ids on the CPU
// backend; prints the generated ids ("1,2,3", or {"ids": [1,2,3]} with
// --json). With --prompt TEXT the model's tokenizer encodes the prompt and
// the reply is printed as text while it is generated (the streaming
// detokenizer), or as {"ids": [...], "text": "..."} with --json. One prefill forward, then one row per step; sampling is the
// counter-based sampler of model/sampling.h at each id's own position.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <exception>
#include <optional>
#include <string>

#include "model/cpu_backend.h"
#include "model/sampling.h"
#include "tokenizer/detokenizer.h"
#include "tools/commands.h"

namespace tf::tools {

int generate_command(const config::GenerateOptions& options) {
    try {
        std::vector<int32_t> prompt_ids = options.prompt_ids;
        std::optional<tokenizer::Tokenizer> tok;
        std::optional<tokenizer::Detokenizer> detok;
        if (!options.prompt_text.empty()) {
            tok = tokenizer::Tokenizer::load(options.model_dir);
            for (tokenizer::TokenId id : tok->encode(options.prompt_text)) prompt_ids.push_back(static_cast<int32_t>(id));
            if (!options.json) detok.emplace(*tok, /*skip_special_tokens=*/true, /*continuation=*/true);
        }
        auto backend = model::load_cpu_backend(options.model_dir, options.threads);
        const model::ModelConfig& config = backend->config();
        for (int32_t id : prompt_ids) {
            if (id >= config.vocab_size) {
                std::fprintf(stderr, "tensorfold generate: --prompt-ids: id %d is outside the vocabulary of %d\n", id,
                             config.vocab_size);
                return 2;
            }
        }
        const auto prompt_length = static_cast<int32_t>(prompt_ids.size());
        const int32_t capacity = prompt_length + options.max_tokens;
        backend->open_stream(0, capacity);
        std::vector<model::Row> rows;
        for (int32_t i = 0; i < prompt_length; ++i) {
            rows.push_back({0, i, prompt_ids[i], i + 1 == prompt_length});
        }
        const model::SamplingParams params{options.temperature, options.top_p, options.seed};
        std::vector<float> logits;
        std::vector<int32_t> generated;
        backend->forward(rows, logits);
        for (int32_t step = 0; step < options.max_tokens; ++step) {
            const int32_t position = prompt_length + step;  // the position the new id will occupy
            const int32_t id = model::sample_token(logits, params, position);
            generated.push_back(id);
            if (detok) {  // text as soon as it is complete UTF-8
                std::fputs(detok->push(static_cast<tokenizer::TokenId>(id)).c_str(), stdout);
                std::fflush(stdout);
            }
            bool eos = false;
            for (int32_t e : config.eos_token_ids) eos = eos || e == id;
            if ((eos && !options.ignore_eos) || step + 1 == options.max_tokens) break;
            model::Row row{0, position, id, true};
            backend->forward({&row, 1}, logits);
        }
        if (detok) {
            std::fputs((detok->finish() + "\n").c_str(), stdout);
            return 0;
        }
        if (tok && options.json) {
            const std::vector<tokenizer::TokenId> ids(generated.begin(), generated.end());
            nlohmann::json out = {{"ids", generated}, {"text", tok->decode(ids, /*skip_special_tokens=*/true)}};
            std::fputs((out.dump() + "\n").c_str(), stdout);
            return 0;
        }
        std::string text = options.json ? "{\"ids\": [" : "";
        for (size_t i = 0; i < generated.size(); ++i) {
            text += (i ? (options.json ? ", " : ",") : "") + std::to_string(generated[i]);
        }
        text += options.json ? "]}\n" : "\n";
        std::fputs(text.c_str(), stdout);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "tensorfold generate: %s\n", e.what());
        return 1;
    }
}

}  // namespace tf::tools
