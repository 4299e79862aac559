#include "config/command_line.h"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "config/build_info.h"
#include "config/model_dir.h"

#ifndef TF_VERSION
#define TF_VERSION "0.0.0"
#endif

namespace tf::config {

namespace {

bool is_plain_decimal(const std::string& text) {
    size_t digits = 0, dots = 0;
    for (char ch : text) {
        if (ch >= '0' && ch <= '9') {
            ++digits;
        } else if (ch == '.') {
            ++dots;
        } else {
            return false;
        }
    }
    return digits > 0 && dots <= 1;
}

std::string format_gib(double gib) {
    std::ostringstream out;
    out.precision(10);
    out << gib;
    return out.str();
}

// The flags of `serve`; their values land in `config` and `recall_*` during
// app.parse(), and finish_serve() derives what the flags imply.
struct ServeFlags {
    std::string model;
    bool recall = false;
    std::string recall_gib_text = "0.0625";
    std::string device = "auto";
    CLI::Option* recall_dir = nullptr;
    CLI::Option* recall_gib = nullptr;
};

// --quantize, for serve and generate. The names are checked here, before
// anything is loaded; model/quant_blocks.h parses them again.
void add_quantize(CLI::App& command, std::string& quantize) {
    command
        .add_option("--quantize", quantize,
                    "Quantize every matmul weight at load, CPU backend: q8_0 (8-bit), q4_0, q5_0 (4- and 5-bit), q4_k, q5_k or q6_k "
                    "(4-, 5- and 6-bit k-quants; matrices whose rows are not a multiple of 256 take q8_0); "
                    "default: the checkpoint's own precision")
        ->check(CLI::IsMember({"q8_0", "q4_0", "q5_0", "q4_k", "q5_k", "q6_k"}));
}

// --kv-type, for serve and generate: checked here, before anything is
// loaded (cpu/kernels/kv_format.h parses the names again).
void add_kv_type(CLI::App& command, std::string& kv_type) {
    command
        .add_option("--kv-type", kv_type,
                    "What the KV cache stores on the CPU backend: f16 (default, 2 bytes an element), bf16, "
                    "q8_0 (int8 in blocks of 32 with a scale each, 1.125 bytes), or f32 (4 bytes, as the model "
                    "computes). The CUDA backend stores bf16")
        ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0"}));
}

// MODEL: a directory (Hugging Face, or one holding a GGUF model) or a .gguf
// file; anything else is refused before a byte of it is read.
CLI::Validator model_path() {
    return CLI::Validator(
        [](std::string& path) {
            std::error_code ec;
            if (std::filesystem::is_directory(path, ec)) return std::string();
            if (!std::filesystem::exists(path, ec)) return "no such file or directory: " + path;
            const bool gguf = path.size() >= 5 && (path.ends_with(".gguf") || path.ends_with(".GGUF"));
            if (std::filesystem::is_regular_file(path, ec) && gguf) return std::string();
            return path + " is neither a model directory nor a .gguf file";
        },
        "DIR|FILE.gguf");
}

CLI::App* add_serve(CLI::App& app, ServerConfig& c, ServeFlags& f) {
    CLI::App* serve = app.add_subcommand("serve", "Serve an OpenAI-compatible HTTP API for a Hugging Face model directory or a GGUF file");
    serve->add_option("MODEL", f.model,
                      "Local Hugging Face model directory (config.json, *.safetensors, tokenizer.json) or GGUF "
                      "file (llama, qwen2, qwen3; a split set by any of its files); default: the embedded "
                      "models/tinycode")
        ->check(model_path());
    serve->add_option("--host", c.host, "Address to listen on")->capture_default_str()->check(
        CLI::Validator([](std::string& v) { return v.empty() ? std::string("must not be empty") : std::string(); },
                       "HOST"));
    serve->add_option("--port", c.port, "TCP port to listen on (0: any free port)")
        ->capture_default_str()
        ->check(CLI::Range(0, 65535));
    serve->add_option("--api-key", c.api_key,
                      "Require 'Authorization: Bearer KEY' on every /v1/* route (default: no key)")
        ->envname("TENSORFOLD_API_KEY")
        ->check(CLI::Validator(
            [](std::string& v) { return v.empty() ? std::string("must not be empty") : std::string(); }, "KEY"));
    serve->add_option("--served-model-name", c.served_model_name,
                      "Model name clients send and /v1/models lists (default: the model directory's name)");
    serve->add_option("--model-alias", c.model_aliases,
                      "Another model name requests may use for the served model (repeatable); '*' serves any "
                      "name, as clients such as Claude Code need")
        // One name per flag, so `--model-alias '*' MODEL` leaves MODEL alone.
        ->allow_extra_args(false)
        ->check(CLI::Validator(
            [](std::string& v) { return v.empty() ? std::string("must not be empty") : std::string(); }, "NAME"));
    serve->add_option("--ctx-size", c.ctx_size, "Context length per stream in tokens (0: the model's maximum)")
        ->capture_default_str()
        ->check(CLI::Range(0, 1 << 24));
    serve->add_option("--max-streams", c.max_streams, "Most streams (requests) decoded at once")
        ->capture_default_str()
        ->check(CLI::Range(1, 1024));
    serve->add_option("--threads", c.threads, "CPU threads for the model (0: every core)")
        ->capture_default_str()
        ->check(CLI::Range(0, 1024));
    add_quantize(*serve, c.quantize);
    add_kv_type(*serve, c.kv_type);
    serve->add_option("--device", f.device, "Backend: auto (CUDA when a GPU is present), cpu or cuda")
        ->capture_default_str()
        ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
    serve->add_option("--gpu-memory-fraction", c.gpu_memory_fraction,
                      "Share of the GPU's memory the CUDA backend takes for weights, KV cache and scratch; "
                      "the KV cache gets what the weights leave")
        ->capture_default_str()
        ->check(CLI::Validator(
            [](std::string& v) {
                char* end = nullptr;
                const double f = std::strtod(v.c_str(), &end);
                return end && *end == '\0' && f > 0.0 && f <= 1.0 ? std::string()
                                                                   : std::string("must be a number in (0, 1]");
            },
            "FRACTION"));
    serve->add_option("--draft-tokens", c.draft_tokens,
                      "Longest draft a stream takes from its own context (0: none; replies are the same tokens "
                      "at every setting). Record copies are Recall's and keep their own window")
        ->capture_default_str()
        ->check(CLI::Range(0, 32));
    serve->add_option("--log-level", c.log_level, "Log level")
        ->capture_default_str()
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));

    serve->add_flag("--recall", f.recall, "Keep the record and draft from it (default: off)");
    f.recall_dir = serve->add_option(
        "--recall-dir", c.recall.dir,
        "The record's own directory (default: ~/.cache/tensorfold/recall/<tokenizer>). Implies --recall");
    f.recall_gib = serve->add_option("--recall-gib", f.recall_gib_text,
                                     "The record's disk in GiB, decimal; beyond it the oldest chunk files are deleted. "
                                     "Implies --recall")
                       ->capture_default_str()
                       ->check(CLI::Validator([](std::string& v) { return check_recall_gib(v); }, "GIB"));
    serve->add_flag("--recall-read-only", c.recall.read_only,
                    "Draft from the record and add nothing to it. Implies --recall");
    return serve;
}

// Fills what the flags imply. Returns an error message, or empty.
std::string finish_serve(ServerConfig& c, const ServeFlags& f, const std::string& executable) {
    // Any of --recall-dir, --recall-gib, --recall-read-only switches Recall on by itself (docs/recall.md, "Flags").
    c.recall.enabled = f.recall || f.recall_dir->count() > 0 || f.recall_gib->count() > 0 || c.recall.read_only;
    c.recall.gib = std::strtod(f.recall_gib_text.c_str(), nullptr);
    if (f.recall_dir->count() > 0 && c.recall.dir.empty()) return "--recall-dir: must not be empty";

    c.device = f.device == "cpu" ? Device::cpu : f.device == "cuda" ? Device::cuda : Device::automatic;
    if (!c.quantize.empty() && c.device == Device::cuda) {
        return "--quantize " + c.quantize + ": the CUDA backend holds bf16 weights; quantized weights run on the CPU "
               "backend (--device cpu, or auto, which --quantize keeps on the CPU)";
    }
    if (!c.kv_type.empty() && c.kv_type != "bf16" && c.device == Device::cuda) {
        return "--kv-type " + c.kv_type + ": the CUDA backend's KV cache is bf16; f32, f16 and q8_0 caches run on the CPU "
               "backend (--device cpu, or auto, which --kv-type keeps on the CPU)";
    }

    if (!f.model.empty()) {
        std::error_code ec;
        std::filesystem::path canonical = std::filesystem::weakly_canonical(f.model, ec);
        c.model_dir = ec ? f.model : canonical.string();
    } else if (auto found = find_default_model_dir(executable)) {
        c.model_dir = found->string();
    } else {
        std::string message = "no MODEL given and the embedded model models/" + std::string(kDefaultModelName) +
                              " was not found; looked in:";
        for (const auto& place : default_model_candidates(executable)) message += "\n  " + place.string();
        return message + "\npass a Hugging Face model directory as MODEL";
    }
    return {};
}

// The flags of `generate` (tools/generate_command.cpp runs it).
struct GenerateFlags {
    std::string model;
    std::string prompt_ids;
};

CLI::App* add_generate(CLI::App& app, GenerateOptions& g, GenerateFlags& f) {
    CLI::App* generate = app.add_subcommand("generate", "Decode one prompt of token ids on the CPU and print the ids");
    generate->add_option("MODEL", f.model,
                         "Local Hugging Face model directory or GGUF file; default: the embedded models/tinycode")
        ->check(model_path());
    generate->add_option("--prompt", g.prompt_text,
                         "The prompt as UTF-8 text, encoded with the model's tokenizer (special tokens allowed); "
                         "prints the generated text");
    generate->add_option("--prompt-ids", f.prompt_ids, "The prompt as comma-separated token ids, e.g. 1,2,3")
        ->check(CLI::Validator(
            [](std::string& v) {
                std::vector<int32_t> ids;
                return parse_token_ids(v, ids);
            },
            "IDS"));
    generate->add_option("--max-tokens", g.max_tokens, "Most ids to generate")->capture_default_str()->check(CLI::Range(1, 1 << 20));
    generate->add_option("--temperature", g.temperature, "0: greedy (argmax, lowest id on ties)")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 100.0));
    generate->add_option("--top-p", g.top_p, "Nucleus sampling: keep the most likely ids holding this probability")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 1.0) & CLI::Validator([](std::string& v) {
                    return std::strtod(v.c_str(), nullptr) > 0 ? std::string() : std::string("must be more than 0");
                }, "P"));
    generate->add_option("--seed", g.seed, "Sampling seed: the random number at a position depends on (seed, position) only")
        ->capture_default_str();
    generate->add_option("--threads", g.threads, "CPU threads (0: every core)")->capture_default_str()->check(CLI::Range(0, 1024));
    add_quantize(*generate, g.quantize);
    add_kv_type(*generate, g.kv_type);
    generate->add_flag("--ignore-eos", g.ignore_eos, "Keep generating past the model's end-of-sequence ids");
    generate->add_flag("--json", g.json, "Print {\"ids\": [...]} instead of comma-separated ids");
    generate->add_flag("--timings", g.timings,
                       "Print load time, prompt tokens/s and decode tokens/s on stderr, as llama.cpp does; "
                       "512 prompt ids and --max-tokens 129 --ignore-eos compare with llama-bench's pp512 and tg128");
    return generate;
}

std::string finish_generate(GenerateOptions& g, const GenerateFlags& f, const std::string& executable) {
    if (!g.prompt_text.empty() && !f.prompt_ids.empty()) return "give --prompt or --prompt-ids, not both";
    if (g.prompt_text.empty()) {
        if (f.prompt_ids.empty()) return "give the prompt as --prompt TEXT or --prompt-ids 1,2,3";
        if (std::string error = parse_token_ids(f.prompt_ids, g.prompt_ids); !error.empty()) return "--prompt-ids: " + error;
    }
    if (!f.model.empty()) {
        std::error_code ec;
        std::filesystem::path canonical = std::filesystem::weakly_canonical(f.model, ec);
        g.model_dir = ec ? f.model : canonical.string();
    } else if (auto found = find_default_model_dir(executable)) {
        g.model_dir = found->string();
    } else {
        return "no MODEL given and the embedded model models/" + std::string(kDefaultModelName) +
               " was not found; pass a Hugging Face model directory as MODEL";
    }
    return {};
}

// The flags of `tokenize` (tools/tokenize_command.cpp runs it).
struct TokenizeFlags {
    std::string model;
};

CLI::App* add_tokenize(CLI::App& app, TokenizeOptions& t, TokenizeFlags& f) {
    CLI::App* tokenize = app.add_subcommand(
        "tokenize", "Read UTF-8 text on stdin and print its token ids as a JSON array (the model's tokenizer.json)");
    tokenize->add_option("MODEL", f.model,
                         "Local Hugging Face model directory or GGUF file; default: the embedded models/tinycode")
        ->check(model_path());
    CLI::Option* decode = tokenize->add_flag("--decode", t.decode, "Read a JSON array of ids and print their text");
    tokenize->add_flag("--chat", t.chat,
                       "Read a JSON array of messages, render it with the chat template (add_generation_prompt), "
                       "then print the ids")
        ->excludes(decode);
    return tokenize;
}

std::string finish_tokenize(TokenizeOptions& t, const TokenizeFlags& f, const std::string& executable) {
    if (!f.model.empty()) {
        std::error_code ec;
        std::filesystem::path canonical = std::filesystem::weakly_canonical(f.model, ec);
        t.model_dir = ec ? f.model : canonical.string();
    } else if (auto found = find_default_model_dir(executable)) {
        t.model_dir = found->string();
    } else {
        return "no MODEL given and the embedded model models/" + std::string(kDefaultModelName) +
               " was not found; pass a Hugging Face model directory as MODEL";
    }
    return {};
}

// The flags of `bench-serve` and of its `make-workloads` (tools/bench_serve.cpp).
void add_bench_server_flags(CLI::App* app, BenchServerOptions& s) {
    app->add_option("--url", s.url, "Base URL of the OpenAI-compatible server (http only; a trailing /v1 is allowed)")
        ->capture_default_str();
    app->add_option("--model", s.model,
                    "Model name to put in every request (default: the file's, else the first of GET /v1/models)");
    app->add_option("--api-key", s.api_key, "Send 'Authorization: Bearer KEY' with every request");
    app->add_option("--timeout", s.timeout_s, "Longest wait in seconds for the server to send anything")
        ->capture_default_str()
        ->check(CLI::Range(0.001, 86400.0));
}

CLI::App* add_bench_serve(CLI::App& app, BenchServeOptions& b, MakeWorkloadsOptions& m, CLI::App*& make) {
    CLI::App* bench = app.add_subcommand(
        "bench-serve",
        "Replay workload files (JSONL) against a running OpenAI-compatible server (tensorfold, llama-server, vLLM) "
        "and report speed, latency, tensorfold's drafting counters and reply identity");
    bench->footer(
        "Per workload: requests/s and output tokens/s over the time from the first request sent to the last reply "
        "done; TTFT, from writing a request to the first streamed chunk with content; ITL per token: the gap "
        "between two chunks with content is shared evenly among the tokens of the later chunk, so a chunk of 4 "
        "drafted tokens that came 8 ms after the previous one gives four samples of 2 ms (the first chunk's tokens "
        "count under TTFT); both as median, p90 and p99. Tokens come from \"token_ids\" (return_token_ids) where "
        "the server sends them, else from usage.completion_tokens spread evenly over the chunks. tokens per round, "
        "record copies offered/landed and copy tokens landed are deltas of tensorfold's /metrics and /v1/recall "
        "(n/a on other servers; tokens per round counts every stream of a batched round). Waves run one after "
        "another. Exit status 1 when a request failed or a reply differs from --reference. See docs/bench-serve.md.");
    bench->add_option("WORKLOAD", b.workloads, "Workload files, one workload each (tensorfold bench-serve make-workloads)")
        ->check(CLI::ExistingFile);
    add_bench_server_flags(bench, b.server);
    CLI::Option* concurrency =
        bench->add_option("--concurrency", b.concurrency, "Requests in flight at once, each on its own keep-alive connection")
            ->capture_default_str()
            ->check(CLI::Range(1, 4096));
    bench->add_flag("--arrivals", b.arrivals,
                    "Send each request at its \"arrival\" time (seconds after its wave starts) instead of at a "
                    "fixed concurrency")
        ->excludes(concurrency);
    bench->add_flag("--json", b.json, "Print one JSON object instead of the text report");
    bench->add_option("--reference", b.reference,
                      "Replies of an earlier run (--save-replies): report whether every reply is the same, token "
                      "for token when both runs have token ids")
        ->check(CLI::ExistingFile);
    bench->add_option("--save-replies", b.save_replies, "Write this run's replies to FILE (JSONL) for a later --reference");
    bench->add_flag("--no-token-ids", [&b](int64_t) { b.token_ids = false; },
                    "Do not ask for \"return_token_ids\" (for servers that reject unknown fields); tokens are then "
                    "counted from usage and replies compared as text");

    make = bench->add_subcommand(
        "make-workloads",
        "Write the workloads regenerate, new-session, agent-pastes, boilerplate and fresh as OUT/NAME.jsonl, built "
        "from the served model's own replies; the same files for the same seed when the server is deterministic");
    add_bench_server_flags(make, m.server);
    make->add_option("--out", m.out_dir, "Directory for the workload files (created if missing)")->required();
    make->add_option("--seed", m.seed, "Picks the tasks, the sampling seeds and the arrival times")->capture_default_str();
    make->add_option("--requests", m.requests, "Requests per workload")->capture_default_str()->check(CLI::Range(2, 10000));
    make->add_option("--max-tokens", m.max_tokens, "max_tokens of every request")
        ->capture_default_str()
        ->check(CLI::Range(1, 1 << 20));
    make->add_option("--rate", m.rate, "Mean requests per second of the arrival times written for --arrivals")
        ->capture_default_str()
        ->check(CLI::Range(0.001, 1e6));
    make->add_option("--workloads", m.only, "Only these workloads (comma-separated)")->delimiter(',');
    return bench;
}

}  // namespace

std::string check_recall_gib(const std::string& text) {
    if (!is_plain_decimal(text)) {
        return "'" + text + "' is not a decimal number of GiB (write e.g. 0.0625 or 2)";
    }
    const double gib = std::strtod(text.c_str(), nullptr);
    if (!std::isfinite(gib) || gib <= 0) return "must be more than 0 GiB, got '" + text + "'";
    const double chunk_gib = static_cast<double>(kRecallChunkBytes) / static_cast<double>(kBytesPerGib);
    if (gib < chunk_gib) {
        return text + " GiB is under one chunk file (4 MiB = " + format_gib(chunk_gib) + " GiB); give at least " +
               format_gib(chunk_gib);
    }
    if (gib > kMaxRecallGib) return text + " GiB is over the limit of " + format_gib(kMaxRecallGib) + " GiB";
    return {};
}

std::string parse_token_ids(const std::string& text, std::vector<int32_t>& ids) {
    ids.clear();
    size_t at = 0;
    while (at <= text.size()) {
        const size_t comma = std::min(text.find(',', at), text.size());
        std::string item = text.substr(at, comma - at);
        const size_t first = item.find_first_not_of(' '), last = item.find_last_not_of(' ');
        item = first == std::string::npos ? std::string() : item.substr(first, last - first + 1);
        if (item.empty()) return "'" + text + "' is not a comma-separated list of token ids (an id is missing)";
        int64_t value = 0;
        for (char ch : item) {
            if (ch < '0' || ch > '9') return "'" + item + "' is not a token id (a non-negative integer)";
            value = value * 10 + (ch - '0');
            if (value > INT32_MAX) return "'" + item + "' is too large for a token id";
        }
        ids.push_back(static_cast<int32_t>(value));
        at = comma + 1;
    }
    return {};
}

ParseOutcome parse_command_line(const std::vector<std::string>& args, const std::string& executable) {
    CLI::App app{"tensorfold: an LLM inference server with Recall", "tensorfold"};
    app.set_version_flag("--version", std::string("tensorfold ") + TF_VERSION + " (commit " + git_commit() + ")");
    app.require_subcommand(0, 1);

    ParseOutcome outcome;
    ServeFlags serve_flags;
    CLI::App* serve = add_serve(app, outcome.command.serve, serve_flags);
    TokenizeFlags tokenize_flags;
    CLI::App* tokenize = add_tokenize(app, outcome.command.tokenize, tokenize_flags);
    GenerateFlags generate_flags;
    CLI::App* generate = add_generate(app, outcome.command.generate, generate_flags);
    CLI::App* make_workloads = nullptr;
    CLI::App* bench_serve =
        add_bench_serve(app, outcome.command.bench_serve, outcome.command.make_workloads, make_workloads);

    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 pops arguments from the back
    try {
        app.parse(reversed);
    } catch (const CLI::ParseError& error) {
        std::ostringstream out, err;
        outcome.exit_code = app.exit(error, out, err) == 0 ? 0 : 2;  // usage errors exit 2
        outcome.message = out.str() + err.str();
        return outcome;
    }

    if (serve->parsed()) {
        outcome.command.subcommand = Subcommand::serve;
        if (std::string error = finish_serve(outcome.command.serve, serve_flags, executable); !error.empty()) {
            outcome.exit_code = 2;
            outcome.message = "tensorfold serve: " + error + "\n";
            return outcome;
        }
        outcome.run = true;
        return outcome;
    }
    if (generate->parsed()) {
        outcome.command.subcommand = Subcommand::generate;
        if (std::string error = finish_generate(outcome.command.generate, generate_flags, executable); !error.empty()) {
            outcome.exit_code = 2;
            outcome.message = "tensorfold generate: " + error + "\n";
            return outcome;
        }
        outcome.run = true;
        return outcome;
    }
    if (make_workloads->parsed()) {
        outcome.command.subcommand = Subcommand::make_workloads;
        outcome.run = true;
        return outcome;
    }
    if (bench_serve->parsed()) {
        outcome.command.subcommand = Subcommand::bench_serve;
        if (outcome.command.bench_serve.workloads.empty()) {
            outcome.exit_code = 2;
            outcome.message = "tensorfold bench-serve: give one or more workload files (tensorfold bench-serve "
                              "make-workloads --out DIR writes them)\n";
            return outcome;
        }
        outcome.run = true;
        return outcome;
    }
    if (tokenize->parsed()) {
        outcome.command.subcommand = Subcommand::tokenize;
        if (std::string error = finish_tokenize(outcome.command.tokenize, tokenize_flags, executable); !error.empty()) {
            outcome.exit_code = 2;
            outcome.message = "tensorfold tokenize: " + error + "\n";
            return outcome;
        }
        outcome.run = true;
        return outcome;
    }
    outcome.message = app.help();
    outcome.exit_code = 2;  // no subcommand: show what there is, but do not pretend something ran
    return outcome;
}

}  // namespace tf::config
