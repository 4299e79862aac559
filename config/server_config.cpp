#include "config/server_config.h"

#include <sstream>

namespace tf::config {

const char* to_string(Device device) {
    switch (device) {
        case Device::automatic: return "auto";
        case Device::cpu: return "cpu";
        case Device::cuda: return "cuda";
    }
    return "?";
}

std::string describe(const ServerConfig& c) {
    std::ostringstream out;
    out << "model: " << c.model_dir << "\n"
        << "served model name: " << (c.served_model_name.empty() ? "(model directory name)" : c.served_model_name) << "\n"
        << "listen: " << c.host << ":" << c.port << "\n"
        << "api key: " << (c.api_key.empty() ? "none" : "set") << "\n"
        << "ctx size: " << (c.ctx_size == 0 ? std::string("model maximum") : std::to_string(c.ctx_size)) << "\n"
        << "max streams: " << c.max_streams << "\n"
        << "threads: " << (c.threads == 0 ? std::string("all cores") : std::to_string(c.threads)) << "\n"
        << "device: " << to_string(c.device) << "\n"
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
