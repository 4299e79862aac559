// The command line: `tensorfold <subcommand> [args]`, parsed with CLI11 into
// native structs. No I/O besides reading the filesystem to resolve paths;
// the caller prints `message`. Thread-safe (no globals).
#pragma once

#include <string>
#include <vector>

#include "config/bench_serve_options.h"
#include "config/generate_options.h"
#include "config/server_config.h"

namespace tf::config {

enum class Subcommand { none, serve, generate, tokenize, bench_serve, make_workloads };

// `tensorfold tokenize [MODEL] [--decode | --chat]` (tools/tokenize_command.cpp).
struct TokenizeOptions {
    std::string model_dir;
    bool decode = false;  // stdin: a JSON array of ids; stdout: the text
    bool chat = false;    // stdin: a JSON array of messages, rendered by the chat template first
};

struct CommandLine {
    Subcommand subcommand = Subcommand::none;
    ServerConfig serve;
    TokenizeOptions tokenize;
    GenerateOptions generate;
    BenchServeOptions bench_serve;        // `bench-serve WORKLOAD...`
    MakeWorkloadsOptions make_workloads;  // `bench-serve make-workloads`
};

// What parsing decided: run `command`, or print `message` and exit with
// `exit_code` (help and --version exit 0, errors exit 2).
struct ParseOutcome {
    bool run = false;
    CommandLine command;
    int exit_code = 0;
    std::string message;
};

// `args` excludes argv[0]. `executable` is used to find the default model.
ParseOutcome parse_command_line(const std::vector<std::string>& args, const std::string& executable);

// Validates a --recall-gib value: a plain positive decimal (digits with an
// optional fraction), at least one chunk file (4 MiB) and at most
// kMaxRecallGib. Returns an empty string when valid, else the reason.
std::string check_recall_gib(const std::string& text);

}  // namespace tf::config
