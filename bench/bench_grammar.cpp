// bench-grammar: what a structured-output token mask costs per sampled
// position on a real vocabulary, to compare with the forward time per token
// (docs/structured-output.md).
//
//   bench-grammar [MODEL_DIR] [--iterations N]
//
// For a few grammar states (the start of an object, inside a key, inside a
// string value, inside a number, after a comma, inside a string with a
// maxLength, which cannot take the plain-text shortcut) prints the
// microseconds of one TokenMasker::allowed() call (median of N) and how many
// tokens it allowed. Single-threaded.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/token_mask.h"
#include "tokenizer/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;
using tf::grammar::Grammar;
using tf::grammar::GrammarState;
using tf::grammar::TokenMasker;

struct Case {
    const char* name;
    std::shared_ptr<const Grammar> grammar;
    const char* text;  // the reply so far
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    std::string model = TF_BENCH_DEFAULT_MODEL;
    int iterations = 200;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
            iterations = std::max(1, std::atoi(argv[++i]));
        } else if (argv[i][0] == '-') {
            std::printf("usage: bench-grammar [--iterations N] [MODEL_DIR]\n"
                        "Microseconds per token mask for schema and json_object states on MODEL_DIR's vocabulary.\n");
            return std::strcmp(argv[i], "--help") == 0 ? 0 : 2;
        } else {
            model = argv[i];
        }
    }
    std::optional<tf::tokenizer::Tokenizer> loaded;
    try {
        loaded = tf::tokenizer::Tokenizer::load(model);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench-grammar: %s\n", e.what());
        return 1;
    }
    const tf::tokenizer::Tokenizer& tok = *loaded;
    std::vector<int32_t> ends;
    if (tok.special_ids().eos) ends.push_back(static_cast<int32_t>(*tok.special_ids().eos));
    const auto built = Clock::now();
    const TokenMasker masker(TokenMasker::bytes_of(tok), ends);
    const double build_ms = std::chrono::duration<double, std::milli>(Clock::now() - built).count();
    std::printf("vocabulary: %d tokens (%s); masker built in %.1f ms\n", masker.vocab_size(), model.c_str(), build_ms);

    auto person = Grammar::from_schema(
        R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},
            "tags":{"type":"array","items":{"type":"string","maxLength":40}}},
            "required":["name","age","tags"],"additionalProperties":false})");
    auto any = Grammar::any_json_object();
    const std::vector<Case> cases = {
        {"schema: start of the object", person, ""},
        {"schema: after '{' (first key)", person, "{"},
        {"schema: inside a string value", person, R"({"name": "Ada Lov)"},
        {"schema: inside a number", person, R"({"name": "Ada", "age": 3)"},
        {"schema: string with maxLength", person, R"({"name": "Ada", "age": 36, "tags": ["mat)"},
        {"json_object: after '{'", any, "{"},
        {"json_object: inside a key", any, R"({"ke)"},
        {"json_object: inside a string value", any, R"({"key": "some te)"},
        {"json_object: inside a number", any, R"({"key": -12.5)"},
        {"json_object: after ', '", any, R"({"key": 1, )"},
    };
    std::printf("%-40s %12s %10s\n", "state", "us/mask", "allowed");
    std::vector<uint64_t> bits;
    for (const Case& c : cases) {
        GrammarState state = c.grammar->start();
        if (!c.grammar->advance(state, c.text)) {
            std::fprintf(stderr, "bench-grammar: '%s' leaves the grammar\n", c.text);
            return 1;
        }
        masker.allowed(*c.grammar, state, bits);  // warm the thread-local buffers
        std::vector<double> us;
        for (int i = 0; i < iterations; ++i) {
            const auto t0 = Clock::now();
            masker.allowed(*c.grammar, state, bits);
            us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        }
        size_t allowed = 0;
        for (uint64_t word : bits) allowed += static_cast<size_t>(__builtin_popcountll(word));
        std::printf("%-40s %12.1f %10zu\n", c.name, median(us), allowed);
    }
    return 0;
}
