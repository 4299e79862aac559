#include "config/server_config.h"

#include <sstream>
#include <stdexcept>

namespace tf::config {

const char* to_string(Device device) {
    switch (device) {
        case Device::automatic: return "auto";
        case Device::cpu: return "cpu";
        case Device::cuda: return "cuda";
    }
    return "?";
}

DeviceChoice resolve_device(Device requested, bool built_with_cuda, int cuda_devices, const std::string& why_none) {
    if (requested == Device::cpu) return {Device::cpu, ""};
    const std::string missing = !built_with_cuda ? "this binary was built without CUDA (nvcc was not found when it was configured)"
                                : cuda_devices <= 0 ? "no CUDA device is usable" + (why_none.empty() ? "" : ": " + why_none)
                                                    : "";
    if (missing.empty()) return {Device::cuda, ""};
    if (requested == Device::cuda) throw std::invalid_argument("--device cuda: " + missing + "; use --device cpu or auto");
    return {Device::cpu, missing};
}

namespace {

std::string join_names(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
    return out;
}

}  // namespace

std::string describe(const ServerConfig& c) {
    std::ostringstream out;
    out << "model: " << c.model_dir << "\n"
        << "served model name: " << (c.served_model_name.empty() ? "(model directory name)" : c.served_model_name) << "\n"
        << "model aliases: " << (c.model_aliases.empty() ? std::string("none") : join_names(c.model_aliases)) << "\n"
        << "listen: " << c.host << ":" << c.port << "\n"
        << "api key: " << (c.api_key.empty() ? "none" : "set") << "\n"
        << "ctx size: " << (c.ctx_size == 0 ? std::string("model maximum") : std::to_string(c.ctx_size)) << "\n"
        << "max streams: " << c.max_streams << "\n"
        << "threads: " << (c.threads == 0 ? std::string("all cores") : std::to_string(c.threads)) << "\n"
        << "device: " << to_string(c.device) << "\n"
        << "quantize: " << (c.quantize.empty() ? std::string("none") : c.quantize) << "\n"
        << "kv type: " << (c.kv_type.empty() ? std::string("backend default") : c.kv_type) << "\n"
        << "gpu memory fraction: " << c.gpu_memory_fraction << "\n"
        << "draft tokens: " << c.draft_tokens << "\n"
        << "log level: " << c.log_level << "\n";
    if (!c.recall.enabled) {
        out << "recall: off\n";
    } else {
        out << "recall: " << (c.recall.read_only ? "read-only" : "on")
            << ", dir " << (c.recall.dir.empty() ? std::string("~/.cache/tensorfold/recall/<tokenizer>") : c.recall.dir)
            << ", " << c.recall.gib << " GiB (" << c.recall.disk_bytes() << " bytes)\n";
    }
    return out.str();
}

}  // namespace tf::config
