// Running a shell command from a test, the way a user runs it, and reading
// what it printed.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace tf::test_support {

struct CommandResult {
    int exit_code = -1;  // -1: did not exit normally
    std::string output;  // stdout (add 2>&1 to the command for stderr too)
};

// Runs `command` with /bin/sh and waits for it.
inline CommandResult run_command(const std::string& command) {
    CommandResult result;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (!pipe) return result;
    char buffer[4096];
    size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, n);
    const int status = ::pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
}

// The tensorfold binary that ctest names in TF_BINARY.
inline std::string tensorfold_binary() {
    const char* binary = std::getenv("TF_BINARY");
    if (binary == nullptr) throw std::runtime_error("TF_BINARY is not set (run the test through ctest)");
    return binary;
}

// `tensorfold ARGS`, stdout and stderr together.
inline CommandResult run_tensorfold(const std::string& args) {
    return run_command(tensorfold_binary() + " " + args + " 2>&1");
}

}  // namespace tf::test_support
