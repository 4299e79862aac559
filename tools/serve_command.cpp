// `tensorfold serve`: until the HTTP server lands (issue 8) it states what it
// was asked to serve and exits non-zero; it never pretends to serve.
#include <spdlog/spdlog.h>

#include "gpu/device.h"
#include "tools/commands.h"

namespace tf::tools {

int serve_command(const config::ServerConfig& config) {
    spdlog::set_level(spdlog::level::from_str(config.log_level));
    std::string why_none;
    auto devices = gpu::list_devices(&why_none);
    if (devices.empty()) {
        spdlog::info("CUDA: {}", why_none);
    } else {
        for (const auto& d : devices) spdlog::info("CUDA device {}: {} ({} MiB)", d.index, d.name, d.memory_bytes >> 20);
    }
    std::printf("%s", config::describe(config).c_str());
    std::fprintf(stderr,
                 "tensorfold serve: not built yet: the HTTP server arrives with a later issue; "
                 "the configuration above was parsed and nothing is being served\n");
    return 3;
}

}  // namespace tf::tools
