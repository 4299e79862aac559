// `tensorfold bench-serve`: replays workload files against a running
// OpenAI-compatible server and reports throughput, latency percentiles,
// tensorfold's drafting counters and whether the replies match a reference
// run; `tensorfold bench-serve make-workloads` writes the workload files from
// the served model's own replies. See docs/benchmarks.md.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench/bench_report.h"
#include "bench/bench_serve.h"
#include "bench/bench_serve_client.h"
#include "bench/bench_stream.h"
#include "bench/workloads.h"

namespace tf::bench {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::chrono::milliseconds timeout_of(const config::BenchServerOptions& o) {
    return std::chrono::milliseconds(static_cast<int64_t>(o.timeout_s * 1000));
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

void write_file(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) throw std::runtime_error("cannot write " + path);
}

// The first model GET /v1/models lists; empty when it lists none.
std::string served_model(Connection& connection) {
    const HttpAnswer answer = connection.request("/v1/models");
    if (answer.status != 200) return {};
    const json body = json::parse(answer.body, nullptr, false);
    if (body.is_discarded() || !body.contains("data") || !body["data"].is_array() || body["data"].empty()) return {};
    return body["data"][0].value("id", "");
}

// tensorfold's counters now; empty on any other server.
ServerCounters read_counters(Connection& connection) {
    ServerCounters counters;
    try {
        const HttpAnswer recall = connection.request("/v1/recall");
        if (recall.status == 200) read_recall(counters, recall.body);
        const HttpAnswer metrics = connection.request("/metrics");
        if (metrics.status == 200) read_metrics(counters, metrics.body);
    } catch (const std::exception&) {
        // Not tensorfold, or it went away: the counters stay unknown.
    }
    return counters;
}

// A writing record takes each finished request a moment after its reply
// went out; wait briefly for that so its counters cover the whole wave.
ServerCounters settled_counters(Connection& connection, const ServerCounters& before, int64_t finished) {
    ServerCounters after = read_counters(connection);
    if (before.recall_state != "writing" || !before.recall_adds) return after;
    const auto deadline = Clock::now() + std::chrono::seconds(10);  // a bound; normally met at once
    while (after.recall_adds && *after.recall_adds - *before.recall_adds < static_cast<double>(finished) &&
           Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        after = read_counters(connection);
    }
    return after;
}

// One line on stderr, redrawn as replies finish; only on a terminal.
class Progress {
public:
    Progress() : enabled_(::isatty(STDERR_FILENO) == 1) {}
    void start(const std::string& workload, size_t total) {
        std::lock_guard lock(mutex_);
        workload_ = workload;
        total_ = total;
        done_ = failed_ = 0;
        draw(true);
    }
    void finished(bool ok) {
        std::lock_guard lock(mutex_);
        ++done_;
        if (!ok) ++failed_;
        draw(done_ == total_);
    }
    void clear() {
        if (enabled_) std::fputs("\r\033[K", stderr);
    }

private:
    void draw(bool force) {
        if (!enabled_) return;
        const auto now = Clock::now();
        if (!force && now - last_ < std::chrono::milliseconds(100)) return;
        last_ = now;
        std::fprintf(stderr, "\r\033[K%s: %zu/%zu replies%s", workload_.c_str(), done_, total_,
                     failed_ ? (", " + std::to_string(failed_) + " failed").c_str() : "");
        std::fflush(stderr);
    }
    bool enabled_;
    std::mutex mutex_;
    std::string workload_;
    size_t total_ = 0, done_ = 0, failed_ = 0;
    Clock::time_point last_{};
};

class Runner {
public:
    Runner(const config::BenchServeOptions& options, Url url)
        : options_(options), url_(std::move(url)), start_(Clock::now()) {}

    // Runs every request of one workload, wave after wave; the traces in file order.
    std::vector<ReplyTrace> run(const Workload& w, const std::vector<std::string>& bodies, Progress& progress,
                                std::vector<std::pair<int, std::pair<ServerCounters, ServerCounters>>>& wave_counters,
                                Connection& probe, bool tensorfold) {
        std::vector<ReplyTrace> traces(w.requests.size());
        std::set<int> waves;
        for (const WorkloadRequest& r : w.requests) waves.insert(r.wave);
        progress.start(w.name, w.requests.size());
        for (int wave : waves) {
            std::vector<size_t> jobs;
            for (size_t i = 0; i < w.requests.size(); ++i) {
                if (w.requests[i].wave == wave) jobs.push_back(i);
            }
            const ServerCounters before = tensorfold ? read_counters(probe) : ServerCounters{};
            if (options_.arrivals) run_arrivals(w, bodies, jobs, traces, progress);
            else run_fixed(w, bodies, jobs, traces, progress);
            int64_t finished = 0;
            for (size_t i : jobs) finished += traces[i].ok ? 1 : 0;
            const ServerCounters after = tensorfold ? settled_counters(probe, before, finished) : ServerCounters{};
            wave_counters.push_back({wave, {before, after}});
        }
        return traces;
    }

private:
    double now() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

    std::unique_ptr<Connection> connection() {
        {
            std::lock_guard lock(pool_mutex_);
            if (!idle_.empty()) {
                auto c = std::move(idle_.back());
                idle_.pop_back();
                return c;
            }
        }
        return std::make_unique<Connection>(url_, options_.server.api_key, timeout_of(options_.server));
    }
    void give_back(std::unique_ptr<Connection> c) {
        std::lock_guard lock(pool_mutex_);
        idle_.push_back(std::move(c));
    }

    void one(const Workload& w, const WorkloadRequest& r, const std::string& body, Connection& c, ReplyTrace& trace) {
        trace.workload = w.name;
        trace.label = r.label;
        trace.wave = r.wave;
        SseParser sse;
        std::string error_body;
        try {
            const int status = c.stream(
                r.route, body, [&] { trace.sent = now(); },
                [&](std::string_view bytes) {
                    const double at = now();
                    for (const std::string& event : sse.feed(bytes)) take_event(trace, event, at);
                },
                error_body);
            trace.done = now();
            if (status != 200) {
                trace.error = "HTTP " + std::to_string(status) + ": " + error_body.substr(0, 300);
            } else if (trace.error.empty()) {
                trace.ok = true;
            }
        } catch (const std::exception& e) {
            trace.done = now();
            trace.ok = false;
            trace.error = e.what();
        }
    }

    // A fixed number of requests in flight, each on its own connection.
    void run_fixed(const Workload& w, const std::vector<std::string>& bodies, const std::vector<size_t>& jobs,
                   std::vector<ReplyTrace>& traces, Progress& progress) {
        std::atomic<size_t> next{0};
        const size_t workers = std::min(jobs.size(), static_cast<size_t>(std::max(1, options_.concurrency)));
        std::vector<std::thread> threads;
        for (size_t t = 0; t < workers; ++t) {
            threads.emplace_back([&] {
                std::unique_ptr<Connection> c = connection();
                for (size_t j = next++; j < jobs.size(); j = next++) {
                    const size_t i = jobs[j];
                    one(w, w.requests[i], bodies[i], *c, traces[i]);
                    progress.finished(traces[i].ok);
                }
                give_back(std::move(c));
            });
        }
        for (std::thread& t : threads) t.join();
    }

    // Each request at its arrival time after the wave starts, however many
    // are then in flight.
    void run_arrivals(const Workload& w, const std::vector<std::string>& bodies, std::vector<size_t> jobs,
                      std::vector<ReplyTrace>& traces, Progress& progress) {
        std::stable_sort(jobs.begin(), jobs.end(),
                         [&](size_t a, size_t b) { return *w.requests[a].arrival < *w.requests[b].arrival; });
        const auto wave_start = Clock::now();
        std::vector<std::thread> threads;
        for (size_t i : jobs) {
            std::this_thread::sleep_until(wave_start + std::chrono::duration_cast<Clock::duration>(
                                                           std::chrono::duration<double>(*w.requests[i].arrival)));
            threads.emplace_back([&, i, c = connection()]() mutable {
                one(w, w.requests[i], bodies[i], *c, traces[i]);
                progress.finished(traces[i].ok);
                give_back(std::move(c));
            });
        }
        for (std::thread& t : threads) t.join();
    }

    const config::BenchServeOptions& options_;
    Url url_;
    Clock::time_point start_;
    std::mutex pool_mutex_;
    std::vector<std::unique_ptr<Connection>> idle_;
};

std::string stem(const std::string& path) { return std::filesystem::path(path).stem().string(); }

}  // namespace

int bench_serve_command(const config::BenchServeOptions& options) {
    Url url;
    std::vector<Workload> workloads;
    ReplyBook reference;
    try {
        url = parse_url(options.server.url);
        for (const std::string& file : options.workloads) {
            Workload w{stem(file), {}};
            try {
                w.requests = parse_workload(read_file(file));
            } catch (const std::runtime_error& e) {
                throw std::runtime_error(file + ": " + e.what());
            }
            if (w.requests.empty()) throw std::runtime_error(file + ": no requests");
            for (const WorkloadRequest& r : w.requests) {
                if (options.arrivals && !r.arrival) {
                    throw std::runtime_error(file + ": request '" + r.label + "' has no \"arrival\" (needed by --arrivals)");
                }
            }
            workloads.push_back(std::move(w));
        }
        if (!options.reference.empty()) {
            try {
                reference = parse_replies(read_file(options.reference));
            } catch (const std::runtime_error& e) {
                throw std::runtime_error(options.reference + ": " + e.what());
            }
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "tensorfold bench-serve: %s\n", e.what());
        return 2;
    }

    Connection probe(url, options.server.api_key, timeout_of(options.server));
    std::string model = options.server.model;
    RunReport report;
    report.url = options.server.url;
    report.mode = options.arrivals ? "arrivals" : "concurrency " + std::to_string(options.concurrency);
    report.concurrency = options.arrivals ? 0 : options.concurrency;
    try {
        const std::string listed = served_model(probe);
        if (model.empty()) model = listed;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "tensorfold bench-serve: cannot reach %s: %s\n", options.server.url.c_str(), e.what());
        return 1;
    }
    // tensorfold answers GET /v1/recall and has tensorfold_ metrics; other
    // servers get the same run without those columns.
    const bool tensorfold = read_counters(probe).tensorfold();
    report.server = tensorfold ? "tensorfold" : "other";

    Progress progress;
    Runner runner(options, url);
    std::vector<ReplyTrace> all_traces;
    bool failures = false, mismatches = false;
    for (const Workload& w : workloads) {
        std::vector<std::string> bodies;
        for (const WorkloadRequest& r : w.requests) {
            json body = r.body;
            if (!options.server.model.empty() || !body.contains("model")) body["model"] = model;
            body["stream"] = true;
            body["stream_options"] = {{"include_usage", true}};
            if (options.token_ids) body["return_token_ids"] = true;
            bodies.push_back(body.dump(-1, ' ', false, json::error_handler_t::replace));
        }
        std::vector<std::pair<int, std::pair<ServerCounters, ServerCounters>>> wave_counters;
        std::vector<ReplyTrace> traces = runner.run(w, bodies, progress, wave_counters, probe, tensorfold);
        progress.clear();

        WorkloadReport entry;
        entry.name = w.name;
        entry.file = options.workloads[&w - workloads.data()];
        entry.all = summarize(traces, wave_counters.front().second.first, wave_counters.back().second.second);
        if (wave_counters.size() > 1) {
            for (const auto& [wave, counters] : wave_counters) {
                std::vector<ReplyTrace> part;
                for (const ReplyTrace& t : traces) {
                    if (t.wave == wave) part.push_back(t);
                }
                entry.waves.push_back({wave, summarize(part, counters.first, counters.second)});
            }
        }
        if (!options.reference.empty()) {
            entry.identity = compare_replies(traces, reference, w.name);
            mismatches = mismatches || !entry.identity->identical();
        }
        for (const ReplyTrace& t : traces) {
            if (!t.ok) {
                failures = true;
                std::fprintf(stderr, "tensorfold bench-serve: %s %s failed: %s\n", w.name.c_str(), t.label.c_str(),
                             t.error.c_str());
            }
        }
        report.workloads.push_back(std::move(entry));
        all_traces.insert(all_traces.end(), std::make_move_iterator(traces.begin()), std::make_move_iterator(traces.end()));
    }

    if (!options.save_replies.empty()) {
        try {
            write_file(options.save_replies, replies_jsonl(all_traces));
        } catch (const std::exception& e) {
            std::fprintf(stderr, "tensorfold bench-serve: %s\n", e.what());
            return 1;
        }
    }
    const std::string out = options.json ? report_json(report).dump(2) + "\n" : report_text(report);
    std::fputs(out.c_str(), stdout);
    return failures || mismatches ? 1 : 0;
}

int make_workloads_command(const config::MakeWorkloadsOptions& options) {
    std::vector<std::string> names = options.only.empty() ? workload_names() : options.only;
    for (const std::string& name : names) {
        const auto& known = workload_names();
        if (std::find(known.begin(), known.end(), name) == known.end()) {
            std::string list;
            for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
            std::fprintf(stderr, "tensorfold bench-serve make-workloads: no workload named '%s' (known: %s)\n",
                         name.c_str(), list.c_str());
            return 2;
        }
    }
    try {
        const Url url = parse_url(options.server.url);
        Connection connection(url, options.server.api_key, timeout_of(options.server));
        BuildOptions build;
        build.model = options.server.model.empty() ? served_model(connection) : options.server.model;
        if (build.model.empty()) throw std::runtime_error("GET /v1/models lists no model; pass --model");
        build.seed = options.seed;
        build.requests = options.requests;
        build.max_tokens = options.max_tokens;
        build.rate = options.rate;
        const CallModel call = [&](const std::string& route, const json& request) {
            json body = request;
            body["return_token_ids"] = true;
            const HttpAnswer answer = connection.request(route, body.dump(-1, ' ', false, json::error_handler_t::replace));
            if (answer.status != 200) {
                throw std::runtime_error(route + " answered " + std::to_string(answer.status) + ": " + answer.body.substr(0, 300));
            }
            const json reply = json::parse(answer.body, nullptr, false);
            if (reply.is_discarded() || !reply.contains("choices") || reply["choices"].empty()) {
                throw std::runtime_error(route + " answered without choices: " + answer.body.substr(0, 300));
            }
            const json& choice = reply["choices"][0];
            ModelReply out;
            if (choice.contains("text") && choice["text"].is_string()) out.text = choice["text"].get<std::string>();
            if (choice.contains("message") && choice["message"].is_object()) {
                out.text = choice["message"].value("content", "");
            }
            if (choice.contains("token_ids") && choice["token_ids"].is_array()) {
                out.token_ids = choice["token_ids"].get<std::vector<int32_t>>();
                out.has_ids = true;
            }
            return out;
        };
        std::filesystem::create_directories(options.out_dir);
        for (const std::string& name : names) {
            const Workload w = build_workload(name, build, call, [](const std::string& line) {
                std::fprintf(stderr, "%s\n", line.c_str());
            });
            std::string text;
            std::set<int> waves;
            for (const WorkloadRequest& r : w.requests) {
                text += workload_line(r) + "\n";
                waves.insert(r.wave);
            }
            const std::string path = (std::filesystem::path(options.out_dir) / (name + ".jsonl")).string();
            write_file(path, text);
            std::printf("wrote %s: %zu requests in %zu wave%s\n", path.c_str(), w.requests.size(), waves.size(),
                        waves.size() == 1 ? "" : "s");
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "tensorfold bench-serve make-workloads: %s\n", e.what());
        return 1;
    }
    return 0;
}

}  // namespace tf::bench
