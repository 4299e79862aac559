// The subcommands of the tensorfold executable. Each returns the process exit
// code and runs on the main thread. bench-serve and make-workloads live with
// the other benchmarks (bench/bench_serve.h).
#pragma once

#include "config/generate_options.h"
#include "config/command_line.h"
#include "config/server_config.h"

namespace tf::tools {

int serve_command(const config::ServerConfig& config);
int tokenize_command(const config::TokenizeOptions& options);
int generate_command(const config::GenerateOptions& options);

}  // namespace tf::tools
