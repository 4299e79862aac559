// Shared set-up for engine tests: the real tinycode model on the CPU
// backend, records in temp directories, and deterministic random cases.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cpu/cpu_backend.h"
#include "engine/engine.h"
#include "engine/round_driver.h"
#include "recall/record.h"

namespace tf::engine::testing {

inline std::string tinycode_dir() { return std::string(TF_SOURCE_DIR_FOR_TESTS) + "/models/tinycode"; }

// The tinycode backend, loaded once per test binary.
inline model::Backend& tinycode() {
    static std::unique_ptr<model::Backend> backend = cpu::load_cpu_backend(tinycode_dir(), 2);
    return *backend;
}

// A fresh temp directory, removed when the object goes.
class TempDir {
public:
    explicit TempDir(const std::string& tag) {
        path_ = std::filesystem::temp_directory_path() /
                ("tf-engine-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
        std::filesystem::remove_all(path_);
    }
    ~TempDir() { std::filesystem::remove_all(path_); }
    const std::filesystem::path& path() const { return path_; }

private:
    static int& counter() {
        static int n = 0;
        return n;
    }
    std::filesystem::path path_;
};

inline recall::TokenizerIdentity test_tokenizer_identity() {
    return {"5e1f0c0de5e1f0c0de5e1f0c0de5e1f0c0de5e1f0c0de5e1f0c0de5e1f0c0de5", 8192};
}

inline std::unique_ptr<recall::Record> open_record(const std::filesystem::path& dir, bool read_only) {
    recall::RecordOptions options;
    options.dir = dir.string();
    options.read_only = read_only;
    options.model = "tinycode";
    options.tokenizer = test_tokenizer_identity();
    options.min_free_bytes = 0;  // tests must not depend on the machine's free disk
    return recall::Record::open(options);
}

struct Case {
    GenerationRequest request;
    std::string kind;
};

inline GenerationRequest make_request(std::vector<TokenId> prompt, float temperature, float top_p, uint64_t seed,
                                      int32_t max_tokens) {
    GenerationRequest r;
    r.prompt = std::move(prompt);
    r.sampling.temperature = temperature;
    r.sampling.top_p = top_p;
    r.sampling.seed = seed;
    r.max_tokens = max_tokens;
    r.stop_tokens = tinycode().config().eos_token_ids;
    return r;
}

// Runs every request in one engine at once (they share rounds) and returns
// each reply's tokens in request order.
inline std::vector<std::vector<TokenId>> run_together(Engine& engine, const std::vector<GenerationRequest>& requests) {
    std::vector<RequestId> ids;
    for (const auto& r : requests) ids.push_back(engine.submit(r));
    std::vector<std::vector<TokenId>> replies(requests.size());
    while (!engine.idle()) {
        for (StreamUpdate& u : engine.step()) {
            const auto at = std::find(ids.begin(), ids.end(), u.request) - ids.begin();
            replies[static_cast<size_t>(at)].insert(replies[static_cast<size_t>(at)].end(), u.tokens.begin(),
                                                    u.tokens.end());
        }
    }
    return replies;
}

inline EngineOptions plain_options() {
    EngineOptions o;
    o.drafter.own_context = false;
    return o;
}

// One stream driven through a RoundDriver of its own on tinycode, KV stream
// 0, to its end: what it replied, and how.
struct DrivenReply {
    std::vector<TokenId> tokens;
    std::vector<TokenLogprob> logprobs;
    FinishReason finish = FinishReason::running;
    DraftCounters counters;
    int64_t rounds = 0;
};

// `drafter` null: no drafts at all (not even own context).
inline DrivenReply drive(const GenerationRequest& request, const Drafter* drafter, int32_t capacity = 256) {
    RoundDriver driver(tinycode());
    constexpr StreamId kv = 0;
    tinycode().open_stream(kv, capacity);
    Stream stream(1, kv, request, 0, capacity, nullptr);
    DrivenReply reply;
    const Drafter none(CostCurve::flat(64), DrafterOptions{.own_context = false}, nullptr);
    while (!stream.finished()) {
        if (stream.prefilling()) {
            driver.add_prefill(stream, 512);
        } else {
            driver.add_decoding(stream, drafter ? *drafter : none);
        }
        StreamUpdate update = land_verdict(stream, driver.run().front()).update;
        reply.logprobs.insert(reply.logprobs.end(), update.logprobs.begin(), update.logprobs.end());
    }
    tinycode().close_stream(kv);
    reply.tokens = stream.reply();
    reply.finish = stream.finish_reason();
    reply.counters = stream.counters();
    reply.rounds = driver.rounds_run();
    return reply;
}

}  // namespace tf::engine::testing
