#include "config/model_dir.h"

#include <system_error>

namespace tf::config {

namespace fs = std::filesystem;

fs::path executable_path() {
    std::error_code ec;
    fs::path path = fs::read_symlink("/proc/self/exe", ec);
    return ec ? fs::path{} : path;
}

std::vector<fs::path> default_model_candidates(const fs::path& executable) {
    std::vector<fs::path> candidates;
    if (!executable.empty()) {
        const fs::path bin = executable.parent_path();
        candidates.push_back(bin / "models" / kDefaultModelName);
        candidates.push_back(bin.parent_path() / "models" / kDefaultModelName);
        candidates.push_back(bin.parent_path() / "share" / "tensorfold" / "models" / kDefaultModelName);
    }
#ifdef TF_SOURCE_MODELS_DIR
    candidates.push_back(fs::path(TF_SOURCE_MODELS_DIR) / kDefaultModelName);
#endif
    return candidates;
}

std::optional<fs::path> find_default_model_dir(const fs::path& executable) {
    for (const fs::path& candidate : default_model_candidates(executable)) {
        std::error_code ec;
        if (!fs::is_regular_file(candidate / "config.json", ec)) continue;
        fs::path canonical = fs::weakly_canonical(candidate, ec);
        return ec ? candidate : canonical;
    }
    return std::nullopt;
}

}  // namespace tf::config
