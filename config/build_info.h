// What `tensorfold --version` reports besides the version number.
#pragma once

namespace tf::config {

// The git commit (12 hex digits) checked out when this binary was built, or
// "unknown" outside a git checkout. Defined in a file the build generates
// (cmake/GitCommit.cmake).
const char* git_commit();

}  // namespace tf::config
