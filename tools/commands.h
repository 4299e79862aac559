// The subcommands of the tensorfold executable. Each returns the process exit
// code and runs on the main thread.
#pragma once

#include "config/generate_options.h"
#include "config/command_line.h"
#include "config/server_config.h"

namespace tf::tools {

int serve_command(const config::ServerConfig& config);
int tokenize_command(const config::TokenizeOptions& options);
int generate_command(const config::GenerateOptions& options);
int bench_serve_command(const config::BenchServeOptions& options);
int make_workloads_command(const config::MakeWorkloadsOptions& options);

}  // namespace tf::tools
