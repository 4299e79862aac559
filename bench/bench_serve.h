// `tensorfold bench-serve` and `tensorfold make-workloads`: the load client
// and its workload files, run as subcommands of the executable (tools/main.cpp
// dispatches to them). Each returns the process exit code.
#pragma once

#include "config/bench_serve_options.h"

namespace tf::bench {

int bench_serve_command(const config::BenchServeOptions& options);
int make_workloads_command(const config::MakeWorkloadsOptions& options);

}  // namespace tf::bench
