// Finding the embedded default model (models/tinycode) when `serve` is given
// no MODEL. Pure functions over the filesystem; thread-safe.
#pragma once

#include <filesystem>
#include <optional>
#include <vector>

namespace tf::config {

inline constexpr const char* kDefaultModelName = "tinycode";

// The running executable's path (/proc/self/exe), or empty if unknown.
std::filesystem::path executable_path();

// Places searched for models/tinycode, in order: beside the executable, one
// level up (a build directory inside the source tree), the install prefix's
// share/tensorfold/models, and the source tree this binary was built from.
std::vector<std::filesystem::path> default_model_candidates(const std::filesystem::path& executable);

// The first candidate that holds a config.json, if any.
std::optional<std::filesystem::path> find_default_model_dir(const std::filesystem::path& executable);

}  // namespace tf::config
