// `tensorfold serve`: loads the model, opens the record when --recall asks
// for it, starts the actor service and the HTTP server, prints
// "listening on http://HOST:PORT", and serves until SIGINT or SIGTERM.
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "actors/actor_service.h"
#include "cpu/cpu_backend.h"
#include "engine/calibrate.h"
#include "gpu/cuda_backend.h"
#include "gpu/device.h"
#include "http/router.h"
#include "http/server.h"
#include "recall/record.h"
#include "recall/test_seams.h"
#include "tokenizer/tokenizer.h"
#include "tools/commands.h"
#include "tools/model_files.h"

namespace tf::tools {

namespace {

// Rows of the start-up cost measurement: the longest copy worth verifying
// on a CPU is well under this.
constexpr int32_t kCostCurveRows = 32;
// The CPU prompt cache's budget: 8 GiB of KV (74k tokens of a Qwen3-0.6B
// shape in f16), and never more tokens than its lookups should scan.
constexpr uint64_t kPromptCacheBytes = uint64_t{8} << 30;
constexpr int64_t kPromptCacheMostTokens = int64_t{1} << 22;

struct ServeError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// config.json's "architectures", read before load_model_config (which
// refuses architectures it does not know) and before any weight is loaded.
std::vector<std::string> architectures(const std::string& model_dir) {
    const std::filesystem::path path = std::filesystem::path(model_dir) / "config.json";
    std::ifstream file(path);
    if (!file) throw ServeError(path.string() + ": cannot be read; is " + model_dir + " a Hugging Face model directory?");
    std::stringstream text;
    text << file.rdbuf();
    const nlohmann::json config = nlohmann::json::parse(model::quote_nonfinite_numbers(text.str()), nullptr, false);
    std::vector<std::string> names;
    if (config.is_discarded()) throw ServeError(path.string() + ": not valid JSON");
    if (auto it = config.find("architectures"); it != config.end() && it->is_array()) {
        for (const auto& name : *it) {
            if (name.is_string()) names.push_back(name.get<std::string>());
        }
    }
    return names;
}

std::string served_name(const config::ServerConfig& config) {
    if (!config.served_model_name.empty()) return config.served_model_name;
    return default_model_name(config.model_dir);
}

recall::TokenizerIdentity record_identity(const tokenizer::Tokenizer& tokenizer) {
    return {tokenizer.identity().digest_hex, tokenizer.identity().vocab_size};
}

std::unique_ptr<recall::Record> open_record(const config::ServerConfig& config, const std::string& model_name,
                                            const tokenizer::Tokenizer& tokenizer) {
    recall::RecordOptions options;
    options.dir = config.recall.dir;  // empty: ~/.cache/tensorfold/recall/<tokenizer>
    options.capacity_bytes = config.recall.disk_bytes();
    options.read_only = config.recall.read_only;
    options.model = model_name;
    options.tokenizer = record_identity(tokenizer);
    if (const auto& legacy = tokenizer.legacy_identity()) options.legacy_tokenizer = recall::TokenizerIdentity{legacy->digest_hex, legacy->vocab_size};
    std::vector<std::string> seams;
    options.fs = recall::with_test_seams(recall::FsOps::real(), [](const char* name) { return std::getenv(name); },
                                         &seams);
    for (const std::string& seam : seams) {
        spdlog::warn("recall: test seam {} is set: the record's disk will fail or report free space on purpose "
                     "(recall/test_seams.h); never set it outside tests",
                     seam);
    }
    return recall::Record::open(std::move(options));
}

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}

int serve(const config::ServerConfig& config, const sigset_t& stop_signals) {
    // The port is bound first, so a port in use fails at once, before the
    // model loads or the record opens; connections wait in the backlog
    // until start().
    http::Router* router_ready = nullptr;
    http::ServerOptions server_options;
    server_options.host = config.host;
    server_options.port = static_cast<uint16_t>(config.port);
    server_options.threads = 2;
    http::Server server(server_options, [&router_ready](http::HttpRequest request, std::shared_ptr<http::Responder> responder) {
        router_ready->handle(std::move(request), std::move(responder));
    });

    const std::optional<std::string> gguf = gguf_of(config.model_dir);
    const std::string model_name = served_name(config);
    tokenizer::Tokenizer tokenizer = load_model_tokenizer(config.model_dir);

    const std::vector<std::string> arch = gguf ? std::vector<std::string>{} : architectures(config.model_dir);
    for (const std::string& name : arch) {
        // Flash Next has its own GPU replay drafting and never consults the
        // record; reject Recall flags now, before any weights load
        // (docs/recall.md, "Flags").
        if (name == "FlashNextForCausalLM" && config.recall.enabled) {
            throw ServeError(config.model_dir + " is a Flash Next model (config.json architectures: " + name +
                             "): Flash Next's replay engine copies from its own history on the GPU and reads no "
                             "record, so a Flash Next server refuses --recall; start it without the --recall flags");
        }
    }
    // The CUDA backend has no LayerNorm1P, squared-ReLU, Mamba2 or expert layers yet.
    bool cpu_only_architecture = false;
    for (const std::string& name : arch) {
        if (name != "NemotronForCausalLM" && name != "NemotronHForCausalLM" && name != "Qwen3MoeForCausalLM") continue;
        if (config.device == config::Device::cuda) {
            throw ServeError(config.model_dir + " is a " + name +
                             " model: its layers run on the CPU backend only (the CUDA backend has no Mamba2, "
                             "LayerNorm1P, squared-ReLU or mixture-of-experts layers yet); pass --device cpu or auto");
        }
        cpu_only_architecture = true;
    }
    // The device is settled before any weight loads: a wrong --device costs nothing.
    std::string why_none;
    const std::vector<gpu::DeviceInfo> devices = gpu::list_devices(&why_none);
    config::DeviceChoice device;
    try {
        device = config::resolve_device(config.device, gpu::built_with_cuda(), static_cast<int>(devices.size()), why_none);
    } catch (const std::invalid_argument& e) {
        throw ServeError(e.what());
    }
    if (config.device == config::Device::automatic && device.device == config::Device::cuda && !config.quantize.empty()) {
        device = {config::Device::cpu, "--quantize " + config.quantize + " runs on the CPU backend"};
    }
    if (config.device == config::Device::automatic && device.device == config::Device::cuda && !config.kv_type.empty() &&
        config.kv_type != "bf16") {
        device = {config::Device::cpu, "--kv-type " + config.kv_type + " runs on the CPU backend"};
    }
    if (gguf && device.device == config::Device::cuda) {
        if (config.device == config::Device::cuda) {
            throw ServeError(*gguf + ": GGUF models run on the CPU backend (the CUDA backend reads Hugging Face "
                             "directories in bf16); pass --device cpu or auto");
        }
        device = {config::Device::cpu, "GGUF models run on the CPU backend"};
    }
    if (cpu_only_architecture && device.device == config::Device::cuda) {
        device = {config::Device::cpu, arch.front() + " models run on the CPU backend"};
    }
    if (config.device == config::Device::automatic && !device.note.empty()) {
        spdlog::info("--device auto: serving on the CPU: {}", device.note);
    }

    // The record opens before any weight loads: every refusal (another
    // tokenizer's record, a missing or edited identity, a link, another
    // user's or a world-readable file) needs only the tokenizer, and a user
    // should not wait out a load and calibration to hear it.
    std::unique_ptr<recall::Record> record;
    if (config.recall.enabled) record = open_record(config, model_name, tokenizer);

    const auto load_start = std::chrono::steady_clock::now();
    std::unique_ptr<model::Backend> backend;
    gpu::CudaLoadInfo cuda;
    if (device.device == config::Device::cuda) {
        gpu::CudaOptions cuda_options;
        cuda_options.device = devices.front().index;
        cuda_options.memory_fraction = config.gpu_memory_fraction;
        backend = gpu::load_cuda_backend(config.model_dir, cuda_options, &cuda);
    } else {
        cpu::WeightOptions weight_options;
        if (!config.quantize.empty()) weight_options.quantize = model::parse_quant_type(config.quantize);
        weight_options.progress = [](const std::string& line) { std::fprintf(stderr, "tensorfold serve: %s\n", line.c_str()); };
        const cpu::kernels::KvType kv_type =
            config.kv_type.empty() ? cpu::kernels::kDefaultKvType : cpu::kernels::parse_kv_type(config.kv_type);
        backend = cpu::load_cpu_backend(config.model_dir, config.threads, weight_options, kv_type);
    }
    const double load_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start).count();
    const model::ModelConfig& model_config = backend->config();
    const int32_t ctx_size = config.ctx_size > 0 ? config.ctx_size : model_config.max_position_embeddings;
    if (ctx_size > model_config.max_position_embeddings) {
        throw ServeError("--ctx-size " + std::to_string(ctx_size) + " is more than the model's max_position_embeddings (" +
                         std::to_string(model_config.max_position_embeddings) + ")");
    }
    const auto* cpu_backend = dynamic_cast<const cpu::CpuBackend*>(backend.get());
    // The CUDA backend's cache is bf16 (gpu/kv_blocks.h).
    const std::string kv_type = cpu_backend ? cpu::kernels::kv_type_name(cpu_backend->kv_type()) : "bf16";
    const size_t kv_bytes_per_token =
        cpu_backend ? cpu_backend->kv_bytes_per_token()
                    : cpu::KvCache::bytes_per_token(model_config.attention_layer_count(), model_config.num_kv_heads,
                                                    model_config.head_dim, cpu::kernels::KvType::bf16);
    const std::string kv_text =
        fmt::format("KV cache {}, {} bytes a token ({:.2f} GiB for a stream of {} tokens)", kv_type, kv_bytes_per_token,
                    static_cast<double>(kv_bytes_per_token) * ctx_size / static_cast<double>(1ull << 30), ctx_size);
    const auto cost_start = std::chrono::steady_clock::now();
    engine::CalibrationOptions calibration_options;
    calibration_options.max_rows = kCostCurveRows;
    const engine::Calibration calibration = engine::measure_cost_curve(*backend, calibration_options);
    const double cost_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - cost_start).count();

    // On a GPU the KV cache is one pool the weights left room for: every
    // stream may grow to its context, and the prompt cache keeps its share.
    int max_streams = config.max_streams;
    // On the CPU the prompt cache keeps finished streams' KV up to a budget
    // in bytes, so a smaller KV type keeps more tokens; always at least one
    // whole context, so a conversation as long as the context resumes.
    int64_t prompt_cache_tokens = engine::EngineOptions{}.prompt_cache_tokens;
    if (cpu_backend) {
        prompt_cache_tokens = engine::PromptCache::tokens_for_bytes(kPromptCacheBytes, kv_bytes_per_token, ctx_size,
                                                                    kPromptCacheMostTokens, prompt_cache_tokens);
    }
    if (device.device == config::Device::cuda) {
        prompt_cache_tokens = std::min<int64_t>(prompt_cache_tokens, cuda.kv_tokens / 4);
        const int64_t fit = (cuda.kv_tokens - prompt_cache_tokens) / ctx_size;
        if (fit < 1) {
            throw ServeError("the GPU's KV cache holds " + std::to_string(cuda.kv_tokens) +
                             " tokens, not one stream of --ctx-size " + std::to_string(ctx_size) +
                             ": lower --ctx-size or raise --gpu-memory-fraction");
        }
        if (fit < max_streams) {
            spdlog::warn("--max-streams {}: the GPU's KV cache of {} tokens holds {} streams of {} tokens; serving {}",
                         max_streams, cuda.kv_tokens, fit, ctx_size, fit);
            max_streams = static_cast<int>(fit);
        }
    }

    const int threads = cpu_backend ? cpu_backend->threads() : config.threads;
    std::string device_text;
    if (device.device == config::Device::cuda) {
        device_text = fmt::format("device cuda ({}, bf16 weights {} MiB, KV cache {} tokens)", cuda.device_name,
                                  cuda.weight_bytes >> 20, cuda.kv_tokens);
    } else {
        device_text = fmt::format(
            "device cpu ({}, {} activations{}), {}", cpu_backend ? cpu::kernels::isa_name(cpu_backend->isa()) : "?",
            cpu_backend ? cpu::kernels::activations_name(cpu_backend->activations()) : "?",
            cpu_backend && cpu_backend->weights().quantized()
                ? (cpu_backend->int8_dot_product() ? ", int8 VNNI dot products" : ", int8 dot products")
                : "",
            cpu_backend ? cpu_backend->weights().summary() : "?");
    }
    // The startup line ends with the record's state and size, matching what
    // GET /v1/recall reports (docs/recall.md, "Flags" and "GET /v1/recall").
    // The load time includes tiling (or quantizing) the matrices, which the
    // weights' summary states apart.
    spdlog::info("tensorfold serve: model {} ({}, {}), {}, weights loaded in {:.0f} ms, "
                 "{} threads, context {} tokens, {}, {} streams, prompt cache {} tokens, cost curve measured in "
                 "{:.0f} ms ({}); recall: {}",
                 model_name, gguf ? model_config.architecture + " from GGUF" : joined(arch), config.model_dir,
                 device_text, load_ms, threads, ctx_size, kv_text, max_streams, prompt_cache_tokens, cost_ms, calibration.summary(), record ? record->summary() : std::string("off"));

    actors::ActorServiceOptions options;
    options.backend = backend.get();
    options.tokenizer = &tokenizer;
    options.record = record.get();
    options.cost = calibration.curve;
    options.engine.max_streams = max_streams;
    options.engine.prompt_cache_tokens = prompt_cache_tokens;
    options.engine.drafter.own_context = config.draft_tokens > 0;
    options.engine.drafter.own_context_tokens = config.draft_tokens;
    options.engine.ctx_size = ctx_size;
    std::unique_ptr<actors::Service> service = actors::start_actor_service(std::move(options));

    http::RouterOptions router_options;
    router_options.served_model_name = model_name;
    router_options.model_aliases = config.model_aliases;
    router_options.api_key = config.api_key;
    router_options.ctx_size = ctx_size;
    router_options.vocab_size = std::min(static_cast<uint32_t>(model_config.vocab_size), tokenizer.vocab_size());
    router_options.eos_token_ids = model_config.eos_token_ids;
    router_options.created = static_cast<int64_t>(std::time(nullptr));
    router_options.facts.kv_type = kv_type;
    router_options.facts.kv_bytes_per_token = static_cast<int64_t>(kv_bytes_per_token);
    http::Router router(*service, tokenizer, router_options);
    router_ready = &router;

    server.start();
    const std::string host = config.host.find(':') != std::string::npos ? "[" + config.host + "]" : config.host;
    std::printf("listening on http://%s:%u\n", host.c_str(), static_cast<unsigned>(server.port()));
    std::fflush(stdout);

    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    spdlog::info("tensorfold serve: {} received, stopping", signal_number == SIGINT ? "SIGINT" : "SIGTERM");
    server.stop();
    server.wait();
    service->shutdown();
    return 0;
}

}  // namespace

int serve_command(const config::ServerConfig& config) {
    spdlog::set_level(spdlog::level::from_str(config.log_level));
    // SIGINT and SIGTERM are taken by sigwait on this thread; block them
    // before any thread starts so that every thread inherits the mask.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    try {
        return serve(config, stop_signals);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "tensorfold serve: %s\n", e.what());
        return 1;
    }
}

}  // namespace tf::tools
