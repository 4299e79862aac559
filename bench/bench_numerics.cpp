// bench-numerics: what each weight format costs in accuracy, on the greedy
// cases of a Hugging Face oracle file (prompt ids and the greedy ids
// transformers wrote after them). For bf16 weights on the f32 and bf16
// activation paths, for every --quantize format and for every KV cache
// type (--kv-type) it reports:
//   - how many cases it decodes greedily to the oracle's very ids, and for
//     each case that leaves them, the first token where it does, with the
//     reference's margin there: its logit of the oracle's id less its logit
//     of the id this variant chose (a near tie when small);
//   - the largest logit error against the f32 path (bf16 weights, f32
//     activations), over every position of every case with the oracle's ids
//     fed in (so both see the same text): max |ours - f32| at a position,
//     divided by that position's largest |f32 logit|.
// Prints a markdown table (docs/performance.md, "Quantized weights").
//
//   build/bench-numerics [--model=DIR] [--oracle=FILE.jsonl] [--threads=N]
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "cpu/cpu_backend.h"
#include "model/quant_blocks.h"

namespace {

using tf::cpu::CpuBackend;
using tf::model::Row;
namespace kernels = tf::cpu::kernels;
namespace model = tf::model;

struct GreedyCase {
    std::vector<int32_t> prompt, greedy;
};

std::vector<GreedyCase> read_cases(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error(path + ": cannot open");
    std::vector<GreedyCase> cases;
    std::string line;
    while (std::getline(in, line)) {
        const auto j = nlohmann::json::parse(line);
        if (j.value("kind", "") != "greedy") continue;
        cases.push_back({j.at("prompt_ids").get<std::vector<int32_t>>(), j.at("greedy_ids").get<std::vector<int32_t>>()});
    }
    if (cases.empty()) throw std::runtime_error(path + ": no greedy cases");
    return cases;
}

int32_t argmax(const float* logits, int32_t vocab) {
    return static_cast<int32_t>(std::max_element(logits, logits + vocab) - logits);  // lowest id on ties
}

// Greedy decode of `steps` ids after the prompt.
std::vector<int32_t> greedy(CpuBackend& backend, const std::vector<int32_t>& prompt, size_t steps) {
    const int32_t vocab = backend.config().vocab_size;
    backend.open_stream(0, static_cast<int32_t>(prompt.size() + steps + 1));
    std::vector<Row> rows;
    for (size_t i = 0; i < prompt.size(); ++i)
        rows.push_back({0, static_cast<int32_t>(i), prompt[i], i + 1 == prompt.size()});
    std::vector<float> logits;
    backend.forward(rows, logits);
    std::vector<int32_t> out;
    while (out.size() < steps) {
        out.push_back(argmax(logits.data(), vocab));
        if (out.size() == steps) break;
        const Row next{0, static_cast<int32_t>(prompt.size() + out.size() - 1), out.back(), true};
        backend.forward(std::span<const Row>(&next, 1), logits);
    }
    backend.close_stream(0);
    return out;
}

// The logits at the prompt's end and after each oracle id but the last.
std::vector<float> forced_logits(CpuBackend& backend, const GreedyCase& c) {
    std::vector<int32_t> ids = c.prompt;
    ids.insert(ids.end(), c.greedy.begin(), c.greedy.end() - 1);
    backend.open_stream(0, static_cast<int32_t>(ids.size() + 1));
    std::vector<Row> rows;
    for (size_t i = 0; i < ids.size(); ++i) rows.push_back({0, static_cast<int32_t>(i), ids[i], i + 1 >= c.prompt.size()});
    std::vector<float> logits;
    backend.forward(rows, logits);
    backend.close_stream(0);
    return logits;
}

struct Variant {
    std::string weights, path;
    kernels::Activations activations;
    std::optional<model::QuantType> quantize;
    kernels::KvType kv = kernels::KvType::f32;
};

}  // namespace

int main(int argc, char** argv) {
    std::string model = TF_BENCH_DEFAULT_MODEL, oracle = TF_BENCH_DEFAULT_ORACLE;
    int threads = 2;
    for (int i = 1; i < argc; ++i) {
        if (std::strncmp(argv[i], "--model=", 8) == 0) {
            model = argv[i] + 8;
        } else if (std::strncmp(argv[i], "--oracle=", 9) == 0) {
            oracle = argv[i] + 9;
        } else if (std::strncmp(argv[i], "--threads=", 10) == 0) {
            threads = std::atoi(argv[i] + 10);
        } else {
            std::fprintf(stderr, "usage: bench-numerics [--model=DIR] [--oracle=FILE.jsonl] [--threads=N]\n");
            return std::strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }
    try {
        const std::vector<GreedyCase> cases = read_cases(oracle);
        const kernels::Isa isa = kernels::best_isa();
        // The f32 reference needs an f32 path: avx512-bf16 computes in bf16 only.
        const kernels::Isa f32_isa = isa == kernels::Isa::avx512_bf16 ? kernels::Isa::avx512 : isa;
        // The first variant is the reference: f32 activations, f32 KV.
        std::vector<Variant> variants;
        for (kernels::KvType kv : {kernels::KvType::f32, kernels::KvType::f16, kernels::KvType::bf16, kernels::KvType::q8_0})
            variants.push_back({"bf16", kernels::isa_name(f32_isa), kernels::Activations::f32, std::nullopt, kv});
        if (kernels::default_activations(isa) == kernels::Activations::bf16) {
            for (kernels::KvType kv : {kernels::KvType::f32, kernels::KvType::f16, kernels::KvType::bf16, kernels::KvType::q8_0})
                variants.push_back({"bf16", std::string(kernels::isa_name(isa)) + ", bf16 activations",
                                    kernels::Activations::bf16, std::nullopt, kv});
        }
        for (auto type :
             {model::QuantType::q8_0, model::QuantType::q6_k, model::QuantType::q5_k, model::QuantType::q5_0,
              model::QuantType::q4_k, model::QuantType::q4_0}) {
            for (kernels::KvType kv : {kernels::KvType::f32, kernels::kDefaultKvType})
                variants.push_back({model::quant_type_name(type),
                                    std::string(kernels::isa_name(isa)) + ", int8 activations",
                                    kernels::default_activations(isa), type, kv});
        }

        std::vector<std::vector<float>> reference;
        std::printf("Model %s, oracle %s: %zu greedy cases.\n\n", model.c_str(), oracle.c_str(), cases.size());
        std::printf("| weights | kernels | KV cache | cases kept whole | cases that leave the oracle: at token (of), "
                    "the reference's margin there | largest logit error vs f32 path |\n"
                    "|---|---|---|---|---|---|\n");
        for (const Variant& v : variants) {
            tf::cpu::WeightOptions options;
            options.quantize = v.quantize;
            const kernels::Isa run_isa = v.quantize || v.activations == kernels::Activations::bf16 ? isa : f32_isa;
            auto backend = tf::cpu::load_cpu_backend(model, threads, run_isa, v.activations, options,
                                                     kernels::quant_vnni_supported(run_isa), v.kv);
            const int32_t vocab = backend->config().vocab_size;
            int kept = 0;
            std::string lost;
            double worst = 0;
            for (size_t c = 0; c < cases.size(); ++c) {
                const auto ids = greedy(*backend, cases[c].prompt, cases[c].greedy.size());
                size_t same = 0;
                while (same < ids.size() && ids[same] == cases[c].greedy[same]) ++same;
                const auto logits = forced_logits(*backend, cases[c]);
                if (reference.size() <= c) reference.push_back(logits);  // the first variant is the f32 path
                const auto& ref = reference[c];
                if (same == ids.size()) {
                    ++kept;
                } else {
                    // Both saw the same text up to here, so the reference's
                    // logits at this token are comparable.
                    const float* at = ref.data() + same * vocab;
                    char margin[64];
                    std::snprintf(margin, sizeof margin, ", margin %.3f", at[cases[c].greedy[same]] - at[ids[same]]);
                    lost += (lost.empty() ? "" : "; ") + std::string("case ") + std::to_string(c + 1) + ": " +
                            std::to_string(same + 1) + " (" + std::to_string(ids.size()) + ")" + margin;
                }
                for (size_t at = 0; at + vocab <= logits.size(); at += vocab) {
                    double error = 0, scale = 0;
                    for (int32_t i = 0; i < vocab; ++i) {
                        error = std::max(error, std::fabs(static_cast<double>(logits[at + i]) - ref[at + i]));
                        scale = std::max(scale, std::fabs(static_cast<double>(ref[at + i])));
                    }
                    worst = std::max(worst, scale > 0 ? error / scale : 0.0);
                }
            }
            std::printf("| %s | %s | %s | %d of %zu | %s | %.2f%% |\n", v.weights.c_str(), v.path.c_str(),
                        kernels::kv_type_name(v.kv), kept, cases.size(), lost.empty() ? "none" : lost.c_str(),
                        100 * worst);
            std::fflush(stdout);
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench-numerics: %s\n", e.what());
        return 1;
    }
}
