// `tensorfold generate`: the engine's plain decode of one prompt (no drafts,
// no record) on the CPU backend; prints the generated ids ("1,2,3", or
// {"ids": [1,2,3]} with --json). With --prompt TEXT the model's tokenizer
// encodes the prompt and the reply is printed as text while it is generated,
// or as {"ids": [...], "text": "..."} with --json. Sampling is the engine's
// counter-based sampler, so a seed gives the same reply here as in the server.
// --timings adds llama.cpp-style speed lines on stderr; stdout is unchanged.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>

#include "cpu/cpu_backend.h"
#include "engine/engine.h"
#include "engine/generation_speed.h"
#include "engine/tokenizer_text.h"
#include "tools/commands.h"
#include "tools/model_files.h"

namespace tf::tools {

namespace {

double seconds_now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int generate_command(const config::GenerateOptions& options) {
    const double started = seconds_now();
    try {
        std::vector<int32_t> prompt_ids = options.prompt_ids;
        std::optional<tokenizer::Tokenizer> tok;
        if (!options.prompt_text.empty()) {
            tok = load_model_tokenizer(options.model_dir);
            for (tokenizer::TokenId id : tok->encode(options.prompt_text)) prompt_ids.push_back(static_cast<int32_t>(id));
        }
        cpu::WeightOptions weight_options;
        if (!options.quantize.empty()) weight_options.quantize = model::parse_quant_type(options.quantize);
        weight_options.progress = [](const std::string& line) { std::fprintf(stderr, "tensorfold generate: %s\n", line.c_str()); };
        const cpu::kernels::KvType kv_type =
            options.kv_type.empty() ? cpu::kernels::kDefaultKvType : cpu::kernels::parse_kv_type(options.kv_type);
        auto backend = cpu::load_cpu_backend(options.model_dir, options.threads, weight_options, kv_type);
        const model::ModelConfig& config = backend->config();
        for (int32_t id : prompt_ids) {
            if (id >= config.vocab_size) {
                std::fprintf(stderr, "tensorfold generate: --prompt-ids: id %d is outside the vocabulary of %d\n", id,
                             config.vocab_size);
                return 2;
            }
        }
        engine::GenerationRequest request;
        request.prompt = prompt_ids;
        request.max_tokens = options.max_tokens;
        request.sampling.temperature = static_cast<float>(options.temperature);
        request.sampling.top_p = static_cast<float>(options.top_p);
        request.sampling.seed = options.seed;
        if (!options.ignore_eos) request.stop_tokens = config.eos_token_ids;

        engine::EngineOptions plain;
        plain.drafter.own_context = false;  // plain decode: one token per round
        plain.max_streams = 1;
        engine::Engine engine(*backend, engine::CostCurve::flat(1), plain,
                              tok ? engine::tokenizer_text(*tok) : engine::TextDecoderFactory{});
        const bool stream_text = tok && !options.json;
        const auto prompt_tokens = static_cast<int64_t>(prompt_ids.size());
        engine.submit(std::move(request));
        const double loaded = seconds_now();
        engine::GenerationSpeed speed(loaded);
        std::vector<int32_t> generated;
        std::string text;
        while (!engine.idle()) {
            int64_t landed = 0;
            for (engine::StreamUpdate& update : engine.step()) {
                generated.insert(generated.end(), update.tokens.begin(), update.tokens.end());
                landed += static_cast<int64_t>(update.tokens.size());
                text += update.text;
                if (stream_text && !update.text.empty()) {  // text as soon as it is complete UTF-8
                    std::fputs(update.text.c_str(), stdout);
                    std::fflush(stdout);
                }
            }
            speed.step(landed, seconds_now());
        }
        if (stream_text) {
            std::fputs("\n", stdout);
        } else if (tok) {
            nlohmann::json out = {{"ids", generated}, {"text", text}};
            std::fputs((out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n").c_str(), stdout);
        } else {
            std::string out = options.json ? "{\"ids\": [" : "";
            for (size_t i = 0; i < generated.size(); ++i) {
                out += (i ? (options.json ? ", " : ",") : "") + std::to_string(generated[i]);
            }
            out += options.json ? "]}\n" : "\n";
            std::fputs(out.c_str(), stdout);
        }
        if (options.timings) {
            std::fflush(stdout);  // the reply first, when both go to one terminal
            if (const auto* cpu_backend = dynamic_cast<const cpu::CpuBackend*>(backend.get())) {
                std::fprintf(stderr, "%16s = %s, %s, %d threads\n", "weights", cpu_backend->weights().summary().c_str(),
                             cpu::kernels::isa_name(cpu_backend->isa()), cpu_backend->threads());
            }
            std::fputs(speed.lines(prompt_tokens, loaded - started).c_str(), stderr);
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "tensorfold generate: %s\n", e.what());
        return 1;
    }
}

}  // namespace tf::tools
