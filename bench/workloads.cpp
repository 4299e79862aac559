#include "bench/workloads.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <stdexcept>
#include <unordered_set>

namespace tf::bench {

namespace {

using nlohmann::json;

// A small coding task: the earlier wording and names, and other ones for a
// later conversation that asks for the same thing.
struct Task {
    const char* name;
    const char* params;
    const char* doc;
    const char* other_name;
    const char* other_doc;
};

constexpr Task kTasks[] = {
    {"reverse_words", "sentence", "Return the words of a sentence in reverse order.", "flip_words", "Give back the words, last one first."},
    {"is_palindrome", "text", "Check whether text reads the same forwards and backwards.", "check_mirror", "Tell if the text is its own reverse."},
    {"flatten", "nested", "Flatten a list of lists into a single list.", "merge_lists", "Join the inner lists into one list."},
    {"binary_search", "items, target", "Find the index of target in the sorted list items.", "find_sorted", "Locate target in an ordered list."},
    {"word_count", "text", "Count how often each word appears in text.", "tally_words", "Map each word to its number of uses."},
    {"read_config", "path", "Load a JSON configuration file and return it as a dict.", "load_settings", "Read settings stored as JSON."},
    {"fibonacci", "n", "Return the n-th Fibonacci number.", "fib_number", "Compute Fibonacci number n iteratively."},
    {"merge_sorted", "left, right", "Merge two sorted lists into one sorted list.", "combine_ordered", "Combine two ordered lists, keeping the order."},
    {"chunk_list", "items, size", "Split items into consecutive chunks of the given size.", "split_batches", "Cut a list into batches of equal length."},
    {"gcd", "a, b", "Return the greatest common divisor of a and b.", "common_divisor", "Largest number that divides both values."},
    {"transpose", "matrix", "Return the transpose of a matrix given as a list of rows.", "swap_axes", "Turn the rows of a matrix into columns."},
    {"unique_items", "items", "Return the items without duplicates, keeping their order.", "dedupe", "Drop repeated entries but keep the order."},
    {"clamp", "value, low, high", "Limit value to the range from low to high.", "bound_value", "Keep a number between two limits."},
    {"factorial", "n", "Return n factorial.", "product_up_to", "Multiply the numbers from 1 to n."},
    {"parse_csv_line", "line", "Split one line of CSV text into its fields.", "split_record", "Cut a comma-separated record into fields."},
    {"is_prime", "n", "Check whether n is a prime number.", "prime_test", "Tell if a number has no divisors but 1 and itself."},
    {"capitalize_words", "text", "Capitalize the first letter of every word in text.", "title_case", "Upper-case the start of each word."},
    {"moving_average", "values, window", "Return the moving averages of values over a window.", "rolling_mean", "Average each run of window values."},
    {"count_lines", "path", "Count the lines of a text file.", "line_total", "Number of lines in a file."},
    {"to_snake_case", "name", "Convert a CamelCase name to snake_case.", "snakify", "Rewrite a camel-case identifier with underscores."},
    {"max_subarray", "numbers", "Return the largest sum of a contiguous subarray.", "best_run_sum", "Find the biggest sum of consecutive numbers."},
    {"rotate_list", "items, k", "Rotate a list to the right by k steps.", "shift_right", "Move every element k places to the right."},
    {"group_by_key", "records, key", "Group a list of dicts by the value of key.", "bucket_records", "Collect records sharing a field value."},
    {"matrix_multiply", "a, b", "Multiply two matrices given as lists of rows.", "mat_product", "Product of two row-major matrices."},
};

constexpr const char* kLicence =
    "# Copyright 2024 The Inventory Authors. All rights reserved.\n"
    "#\n"
    "# Licensed under the Apache License, Version 2.0 (the \"License\");\n"
    "# you may not use this file except in compliance with the License.\n"
    "# You may obtain a copy of the License at\n"
    "#\n"
    "#     http://www.apache.org/licenses/LICENSE-2.0\n"
    "#\n"
    "# Unless required by applicable law or agreed to in writing, software\n"
    "# distributed under the License is distributed on an \"AS IS\" BASIS,\n"
    "# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.\n"
    "# See the License for the specific language governing permissions and\n"
    "# limitations under the License.\n"
    "\n"
    "import argparse\n"
    "import json\n"
    "import logging\n"
    "import os\n"
    "import sys\n"
    "from dataclasses import dataclass, field\n"
    "from typing import Dict, List, Optional\n"
    "\n"
    "logger = logging.getLogger(__name__)\n"
    "\n\n";

constexpr const char* kEntities[] = {"customer", "order",   "invoice", "product", "shipment", "supplier",
                                     "warehouse", "payment", "refund",  "account", "employee", "ticket",
                                     "coupon",   "review",  "basket",  "vendor",  "contract", "delivery",
                                     "receipt",  "station", "session", "device",  "report",   "budget"};

// Openings of unrelated files in several languages; {n} is a noun, {N} the
// same capitalized, {v} a verb.
constexpr const char* kFreshOpenings[] = {
    "def {v}_{n}(data):\n",
    "function {v}{N}(options) {\n",
    "fn {v}_{n}(input: &str) -> Result<String, Error> {\n",
    "func {V}{N}(ctx context.Context) error {\n",
    "static int {v}_{n}(const char *path)\n{\n",
    "public class {N}Service {\n    public void {v}{N}() {\n",
    "SELECT {n}.id, {n}.name\nFROM {n}\nWHERE",
    "#!/bin/sh\n# {v} every {n} in the current directory\nfor f in",
    "<!DOCTYPE html>\n<html>\n<head>\n  <title>{N} list</title>\n",
    "# Settings of the {n} service\n{n}:\n  host: localhost\n",
    "class {N}Handler(object):\n    def {v}(self, request):\n",
    "import unittest\n\n\nclass Test{N}(unittest.TestCase):\n    def test_{v}(self):\n",
};
constexpr const char* kVerbs[] = {"load", "parse", "render", "update", "validate", "export", "sync", "merge"};

std::string capitalize(std::string word) {
    if (!word.empty() && word[0] >= 'a' && word[0] <= 'z') word[0] = static_cast<char>(word[0] - 'a' + 'A');
    return word;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
    }
    return text;
}

// Deterministic for a seed on every platform: mt19937_64's sequence is fixed
// by the standard, and no std distribution (whose algorithms are not) is used.
class Random {
public:
    Random(uint64_t seed, const std::string& name) : engine_(seed ^ fnv(name)) {}
    uint64_t below(uint64_t n) { return engine_() % n; }
    double unit() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
    template <typename T>
    void shuffle(std::vector<T>& items) {
        for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[below(i)]);
    }
    uint64_t seed() { return engine_() % 1000000; }

private:
    static uint64_t fnv(const std::string& text) {
        uint64_t hash = 1469598103934665603ull;
        for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
        return hash;
    }
    std::mt19937_64 engine_;
};

std::vector<size_t> order(size_t n, Random& random) {
    std::vector<size_t> items(n);
    for (size_t i = 0; i < n; ++i) items[i] = i;
    random.shuffle(items);
    return items;
}

json sampling_body(const BuildOptions& o, bool greedy, Random& random) {
    json body = {{"model", o.model}, {"max_tokens", o.max_tokens}};
    if (greedy) {
        body["temperature"] = 0;
    } else {
        body["temperature"] = 0.7;
        body["seed"] = random.seed();
    }
    return body;
}

json completion(const BuildOptions& o, const std::string& prompt, bool greedy, Random& random) {
    json body = sampling_body(o, greedy, random);
    body["prompt"] = prompt;
    return body;
}

std::string header(const Task& t) {
    return std::string("def ") + t.name + "(" + t.params + "):\n    \"\"\"" + t.doc + "\"\"\"\n";
}

// Poisson arrivals: exponential gaps at `rate`, from each wave's start.
void add_arrivals(std::vector<WorkloadRequest>& requests, double rate, Random& random) {
    std::vector<double> clock;
    for (WorkloadRequest& r : requests) {
        if (clock.size() <= static_cast<size_t>(r.wave)) clock.resize(static_cast<size_t>(r.wave) + 1, 0.0);
        const double at = clock[static_cast<size_t>(r.wave)];
        r.arrival = std::round(at * 1000) / 1000;
        clock[static_cast<size_t>(r.wave)] = at - std::log(1.0 - random.unit()) / rate;
    }
}

double share(const ModelReply& earlier, const ModelReply& later) {
    return earlier.has_ids && later.has_ids ? retyped_share(earlier.token_ids, later.token_ids)
                                            : retyped_share(earlier.text, later.text);
}

std::string percent(double share) { return std::to_string(static_cast<int>(std::lround(share * 100))) + "%"; }

std::vector<WorkloadRequest> regenerate(const BuildOptions& o, Random& random) {
    std::vector<WorkloadRequest> first, again;
    const std::vector<size_t> tasks = order(std::size(kTasks), random);
    const int pairs = std::max(1, o.requests / 2);
    for (int i = 0; i < pairs; ++i) {
        const Task& t = kTasks[tasks[static_cast<size_t>(i) % tasks.size()]];
        const bool greedy = i % 2 == 0;
        const std::string label = std::string(t.name) + "/" + (greedy ? "greedy" : "seeded") + "/" + std::to_string(i);
        const json body = completion(o, header(t), greedy, random);
        first.push_back({label + "/first", "/v1/completions", body, 0, std::nullopt});
        again.push_back({label + "/again", "/v1/completions", body, 1, std::nullopt});
    }
    first.insert(first.end(), again.begin(), again.end());
    return first;
}

// Earlier conversations ask for a task; later ones ask again in other words
// and names, without the earlier one in the prompt. Candidates for the later
// prompt go from the least given away (other wording only) to more of the
// earlier reply's first lines typed in, as an editor user would; the first
// whose reply re-types at least half of the earlier one is kept.
std::vector<WorkloadRequest> new_session(const BuildOptions& o, const CallModel& call, Random& random,
                                         const std::function<void(const std::string&)>& log) {
    std::vector<WorkloadRequest> earlier, later;
    struct Fallback {
        WorkloadRequest first, second;
        double share;
    };
    std::vector<Fallback> fallbacks;
    const size_t pairs = static_cast<size_t>(std::max(1, o.requests / 2));
    for (size_t task : order(std::size(kTasks), random)) {
        if (earlier.size() >= pairs) break;
        const Task& t = kTasks[task];
        const json first_body = completion(o, header(t), true, random);
        const ModelReply first = call("/v1/completions", first_body);
        std::vector<std::string> lines;
        std::istringstream split(first.text);
        for (std::string line; std::getline(split, line);) lines.push_back(line);
        Fallback best{{}, {}, -1};
        bool kept = false;
        for (size_t k = 0; k <= 3 && k <= lines.size() && !kept; ++k) {
            std::string typed;
            for (size_t i = 0; i < k; ++i) typed += lines[i] + "\n";
            const std::string renamed = std::string("# ") + t.other_doc + "\ndef " + t.other_name + "(" + t.params +
                                        "):\n    \"\"\"" + t.doc + "\"\"\"\n" + replace_all(typed, t.name, t.other_name);
            const std::string reworded =
                std::string("def ") + t.name + "(" + t.params + "):\n    \"\"\"" + t.other_doc + "\"\"\"\n" + typed;
            for (const std::string& prompt : {renamed, reworded}) {
                const json body = completion(o, prompt, true, random);
                const double s = share(first, call("/v1/completions", body));
                const std::string base = std::string(t.name) + "/" + std::to_string(k) + "-lines";
                Fallback candidate{{base + "/earlier", "/v1/completions", first_body, 0, std::nullopt},
                                   {base + "/later", "/v1/completions", body, 1, std::nullopt},
                                   s};
                if (s > best.share) best = candidate;
                if (s >= 0.5) {
                    kept = true;
                    break;
                }
            }
        }
        if (kept) {
            log("new-session: " + std::string(t.name) + ": the later reply re-types " + percent(best.share) +
                " of the earlier one");
            earlier.push_back(best.first);
            later.push_back(best.second);
        } else {
            fallbacks.push_back(best);
        }
    }
    // Too few tasks reached half: fill up with the best of the rest.
    std::stable_sort(fallbacks.begin(), fallbacks.end(), [](const Fallback& a, const Fallback& b) { return a.share > b.share; });
    for (size_t i = 0; earlier.size() < pairs && i < fallbacks.size(); ++i) {
        log("new-session: " + fallbacks[i].first.label + ": only " + percent(fallbacks[i].share) + " re-typed, kept to fill up");
        earlier.push_back(fallbacks[i].first);
        later.push_back(fallbacks[i].second);
    }
    earlier.insert(earlier.end(), later.begin(), later.end());
    return earlier;
}

// Two-turn chats: the second turn pastes the first reply back, as an agent
// pastes a file, and asks for it again with an edit.
std::vector<WorkloadRequest> agent_pastes(const BuildOptions& o, const CallModel& call, Random& random,
                                          const std::function<void(const std::string&)>& log) {
    std::vector<WorkloadRequest> first_turns, second_turns;
    const std::vector<size_t> tasks = order(std::size(kTasks), random);
    const int chats = std::max(1, o.requests / 2);
    double shares = 0;
    for (int i = 0; i < chats; ++i) {
        const Task& t = kTasks[tasks[static_cast<size_t>(i) % tasks.size()]];
        const std::string label = std::string(t.name) + "/" + std::to_string(i);
        json messages = json::array({{{"role", "user"}, {"content", "Write this function:\n\n" + header(t)}}});
        json first_body = sampling_body(o, true, random);
        first_body["messages"] = messages;
        const ModelReply reply = call("/v1/chat/completions", first_body);
        messages.push_back({{"role", "assistant"}, {"content", reply.text}});
        messages.push_back({{"role", "user"},
                            {"content", "The file now reads:\n\n" + header(t) + reply.text +
                                            "\n\nWrite the whole file again with the function renamed to " +
                                            t.other_name + ":\n\n"}});
        json second_body = sampling_body(o, true, random);
        second_body["messages"] = messages;
        shares += share(reply, call("/v1/chat/completions", second_body));
        first_turns.push_back({label + "/turn-1", "/v1/chat/completions", first_body, 0, std::nullopt});
        second_turns.push_back({label + "/turn-2", "/v1/chat/completions", second_body, 1, std::nullopt});
    }
    log("agent-pastes: second turns re-type " + percent(shares / chats) + " of the pasted reply on average");
    first_turns.insert(first_turns.end(), second_turns.begin(), second_turns.end());
    return first_turns;
}

std::vector<WorkloadRequest> boilerplate(const BuildOptions& o, Random& random) {
    std::vector<WorkloadRequest> requests;
    const std::vector<size_t> entities = order(std::size(kEntities), random);
    for (int i = 0; i < o.requests; ++i) {
        const std::string e = kEntities[entities[static_cast<size_t>(i) % entities.size()]];
        const std::string E = capitalize(e);
        std::string skeleton;
        switch (i % 3) {
            case 0:
                skeleton = "class " + E + "Repository:\n    \"\"\"Keeps " + e +
                           " records in a JSON file and looks them up by id.\"\"\"\n\n    def __init__(self, path: str) -> None:\n";
                break;
            case 1:
                skeleton = "@dataclass\nclass " + E + ":\n    \"\"\"One " + e + " as stored in the database.\"\"\"\n\n";
                break;
            default:
                skeleton = "def main(argv: Optional[List[str]] = None) -> int:\n    \"\"\"Command-line entry point of the " + e +
                           " tool.\"\"\"\n    parser = argparse.ArgumentParser(description=\"Manage " + e + " records.\")\n";
        }
        const bool greedy = i % 2 == 0;
        requests.push_back({e + "/" + std::to_string(i), "/v1/completions",
                            completion(o, std::string(kLicence) + skeleton, greedy, random), 0, std::nullopt});
    }
    return requests;
}

std::vector<WorkloadRequest> fresh(const BuildOptions& o, Random& random) {
    std::vector<WorkloadRequest> requests;
    const std::vector<size_t> openings = order(std::size(kFreshOpenings), random);
    const std::vector<size_t> nouns = order(std::size(kEntities), random);
    for (int i = 0; i < o.requests; ++i) {
        const std::string noun = kEntities[nouns[static_cast<size_t>(i) % nouns.size()]];
        const std::string verb = kVerbs[random.below(std::size(kVerbs))];
        std::string prompt = kFreshOpenings[openings[static_cast<size_t>(i) % openings.size()]];
        prompt = replace_all(prompt, "{n}", noun);
        prompt = replace_all(prompt, "{N}", capitalize(noun));
        prompt = replace_all(prompt, "{V}", capitalize(verb));
        prompt = replace_all(prompt, "{v}", verb);
        const bool greedy = i % 2 == 0;
        requests.push_back({noun + "/" + verb + "/" + std::to_string(i), "/v1/completions",
                            completion(o, prompt, greedy, random), 0, std::nullopt});
    }
    return requests;
}

template <typename Sequence>
double retyped(const Sequence& earlier, const Sequence& later, size_t run) {
    if (later.empty() || earlier.size() < run || later.size() < run) return 0;
    std::unordered_set<std::string> grams;
    auto key = [](const Sequence& s, size_t at, size_t n) {
        return std::string(reinterpret_cast<const char*>(s.data() + at), n * sizeof(s[0]));
    };
    for (size_t i = 0; i + run <= earlier.size(); ++i) grams.insert(key(earlier, i, run));
    std::vector<bool> covered(later.size(), false);
    for (size_t i = 0; i + run <= later.size(); ++i) {
        if (grams.count(key(later, i, run))) std::fill(covered.begin() + static_cast<long>(i), covered.begin() + static_cast<long>(i + run), true);
    }
    return static_cast<double>(std::count(covered.begin(), covered.end(), true)) / static_cast<double>(later.size());
}

}  // namespace

double retyped_share(const std::vector<int32_t>& earlier, const std::vector<int32_t>& later, size_t run) {
    return retyped(earlier, later, run);
}

double retyped_share(const std::string& earlier, const std::string& later, size_t run) {
    return retyped(earlier, later, run);
}

std::string workload_line(const WorkloadRequest& r) {
    nlohmann::ordered_json line = {{"label", r.label}, {"route", r.route}, {"body", r.body}};
    if (r.wave != 0) line["wave"] = r.wave;
    if (r.arrival) line["arrival"] = *r.arrival;
    return line.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::vector<WorkloadRequest> parse_workload(const std::string& jsonl) {
    std::vector<WorkloadRequest> requests;
    std::unordered_set<std::string> labels;
    std::istringstream lines(jsonl);
    std::string text;
    for (int number = 1; std::getline(lines, text); ++number) {
        if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
        auto fail = [number](const std::string& why) -> std::runtime_error {
            return std::runtime_error("line " + std::to_string(number) + ": " + why);
        };
        const json line = json::parse(text, nullptr, false);
        if (line.is_discarded() || !line.is_object()) throw fail("not a JSON object");
        WorkloadRequest r;
        if (!line.contains("route") || !line["route"].is_string()) throw fail("\"route\" must be a string");
        r.route = line["route"].get<std::string>();
        if (r.route != "/v1/completions" && r.route != "/v1/chat/completions") {
            throw fail("\"route\" must be /v1/completions or /v1/chat/completions, not " + r.route);
        }
        if (!line.contains("body") || !line["body"].is_object()) throw fail("\"body\" must be an object");
        r.body = line["body"];
        r.label = line.contains("label") && line["label"].is_string() ? line["label"].get<std::string>()
                                                                       : "line-" + std::to_string(number);
        if (!labels.insert(r.label).second) throw fail("label '" + r.label + "' is used twice");
        if (line.contains("wave")) {
            if (!line["wave"].is_number_integer() || line["wave"].get<int64_t>() < 0 || line["wave"].get<int64_t>() > 1000) {
                throw fail("\"wave\" must be an integer from 0 to 1000");
            }
            r.wave = line["wave"].get<int>();
        }
        if (line.contains("arrival") && !line["arrival"].is_null()) {
            if (!line["arrival"].is_number() || line["arrival"].get<double>() < 0) {
                throw fail("\"arrival\" must be a number of seconds, 0 or more");
            }
            r.arrival = line["arrival"].get<double>();
        }
        requests.push_back(std::move(r));
    }
    return requests;
}

const std::vector<std::string>& workload_names() {
    static const std::vector<std::string> names = {"regenerate", "new-session", "agent-pastes", "boilerplate", "fresh"};
    return names;
}

Workload build_workload(const std::string& name, const BuildOptions& options, const CallModel& call,
                        const std::function<void(const std::string&)>& log) {
    Random random(options.seed, name);
    Workload w{name, {}};
    if (name == "regenerate") w.requests = regenerate(options, random);
    else if (name == "new-session") w.requests = new_session(options, call, random, log);
    else if (name == "agent-pastes") w.requests = agent_pastes(options, call, random, log);
    else if (name == "boilerplate") w.requests = boilerplate(options, random);
    else if (name == "fresh") w.requests = fresh(options, random);
    else throw std::invalid_argument("no workload named '" + name + "'");
    add_arrivals(w.requests, options.rate, random);
    return w;
}

}  // namespace tf::bench
