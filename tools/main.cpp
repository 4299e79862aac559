// tensorfold: parse the command line, then hand over to one subcommand.
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_serve.h"
#include "config/command_line.h"
#include "config/model_dir.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    std::string executable = tf::config::executable_path().string();
    if (executable.empty() && argc > 0) executable = argv[0];

    tf::config::ParseOutcome parsed = tf::config::parse_command_line(args, executable);
    if (!parsed.run) {
        std::fputs(parsed.message.c_str(), parsed.exit_code == 0 ? stdout : stderr);
        return parsed.exit_code;
    }
    switch (parsed.command.subcommand) {
        case tf::config::Subcommand::serve: return tf::tools::serve_command(parsed.command.serve);
        case tf::config::Subcommand::tokenize: return tf::tools::tokenize_command(parsed.command.tokenize);
        case tf::config::Subcommand::generate: return tf::tools::generate_command(parsed.command.generate);
        case tf::config::Subcommand::bench_serve: return tf::bench::bench_serve_command(parsed.command.bench_serve);
        case tf::config::Subcommand::make_workloads:
            return tf::bench::make_workloads_command(parsed.command.make_workloads);
        case tf::config::Subcommand::none: break;
    }
    return 2;
}
