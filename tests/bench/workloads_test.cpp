// make-workloads' builders with a stand-in model, and the workload line
// format: deterministic for a seed, the waves each workload promises, and
// every line read back as it was written.
#include <gtest/gtest.h>

#include <set>

#include "bench/workloads.h"

namespace tf::bench {
namespace {

using nlohmann::json;

// A stand-in for the served model: the same 40 ids (and their text) for any
// prompt, so every later reply re-types all of an earlier one.
struct FakeModel {
    int calls = 0;
    ModelReply operator()(const std::string&, const json&) {
        ++calls;
        ModelReply reply;
        for (int32_t i = 0; i < 40; ++i) reply.token_ids.push_back(100 + i);
        reply.has_ids = true;
        reply.text = "    return sorted(items)\n";
        return reply;
    }
};

BuildOptions options(uint64_t seed) {
    BuildOptions o;
    o.model = "tinycode";
    o.seed = seed;
    o.requests = 8;
    o.max_tokens = 32;
    return o;
}

std::string lines(const Workload& w) {
    std::string text;
    for (const WorkloadRequest& r : w.requests) text += workload_line(r) + "\n";
    return text;
}

Workload build(const std::string& name, uint64_t seed) {
    FakeModel model;
    return build_workload(name, options(seed), std::ref(model), [](const std::string&) {});
}

TEST(BenchServeWorkloads, SameSeedSameFilesOtherSeedOtherFiles) {
    for (const std::string& name : workload_names()) {
        EXPECT_EQ(lines(build(name, 7)), lines(build(name, 7))) << name;
        EXPECT_NE(lines(build(name, 7)), lines(build(name, 8))) << name;
    }
}

TEST(BenchServeWorkloads, EveryWorkloadHasItsSizeUniqueLabelsAndArrivals) {
    for (const std::string& name : workload_names()) {
        const Workload w = build(name, 3);
        EXPECT_EQ(w.requests.size(), 8u) << name;
        std::set<std::string> labels;
        for (const WorkloadRequest& r : w.requests) {
            EXPECT_TRUE(labels.insert(r.label).second) << name << ": " << r.label;
            EXPECT_TRUE(r.arrival.has_value()) << name;
            EXPECT_EQ(r.body["model"], "tinycode");
            EXPECT_EQ(r.body["max_tokens"], 32);
            // Replayable by a deterministic server: greedy, or sampled with a seed.
            EXPECT_TRUE(r.body["temperature"] == 0 || r.body.contains("seed")) << r.label;
        }
    }
}

TEST(BenchServeWorkloads, RegenerateSendsTheSameBodiesInASecondWave) {
    const Workload w = build("regenerate", 1);
    bool greedy = false, seeded = false;
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(w.requests[i].wave, 0);
        EXPECT_EQ(w.requests[i + 4].wave, 1);
        EXPECT_EQ(w.requests[i].body, w.requests[i + 4].body);
        greedy = greedy || w.requests[i].body["temperature"] == 0;
        seeded = seeded || w.requests[i].body.contains("seed");
    }
    EXPECT_TRUE(greedy && seeded);
}

// The later conversation asks for the same task in other words and names,
// and its prompt does not hold the earlier conversation.
TEST(BenchServeWorkloads, NewSessionPromptsDoNotCarryTheEarlierConversation) {
    const Workload w = build("new-session", 1);
    for (size_t i = 0; i < 4; ++i) {
        const WorkloadRequest& earlier = w.requests[i];
        const WorkloadRequest& later = w.requests[i + 4];
        EXPECT_EQ(earlier.wave, 0);
        EXPECT_EQ(later.wave, 1);
        const std::string first = earlier.body["prompt"], second = later.body["prompt"];
        EXPECT_NE(first, second);
        EXPECT_EQ(second.find(first), std::string::npos);
    }
}

TEST(BenchServeWorkloads, AgentPastesPasteTheFirstReplyIntoTheSecondTurn) {
    const Workload w = build("agent-pastes", 1);
    for (size_t i = 0; i < 4; ++i) {
        const WorkloadRequest& second = w.requests[i + 4];
        EXPECT_EQ(second.route, "/v1/chat/completions");
        EXPECT_EQ(second.wave, 1);
        ASSERT_EQ(second.body["messages"].size(), 3u);
        EXPECT_EQ(second.body["messages"][1]["role"], "assistant");
        const std::string pasted = second.body["messages"][2]["content"];
        EXPECT_NE(pasted.find("return sorted(items)"), std::string::npos);
    }
}

TEST(BenchServeWorkloads, BoilerplateSharesTheHeaderFreshSharesNothing) {
    const Workload boiler = build("boilerplate", 1);
    for (const WorkloadRequest& r : boiler.requests) {
        EXPECT_EQ(r.body["prompt"].get<std::string>().rfind("# Copyright", 0), 0u);
    }
    const Workload fresh = build("fresh", 1);
    std::set<std::string> prompts;
    for (const WorkloadRequest& r : fresh.requests) EXPECT_TRUE(prompts.insert(r.body["prompt"]).second);
}

TEST(BenchServeWorkloads, LinesReadBackAsWritten) {
    const Workload w = build("agent-pastes", 2);
    const std::vector<WorkloadRequest> back = parse_workload(lines(w));
    ASSERT_EQ(back.size(), w.requests.size());
    for (size_t i = 0; i < back.size(); ++i) {
        EXPECT_EQ(back[i].label, w.requests[i].label);
        EXPECT_EQ(back[i].route, w.requests[i].route);
        EXPECT_EQ(back[i].body, w.requests[i].body);
        EXPECT_EQ(back[i].wave, w.requests[i].wave);
        EXPECT_EQ(back[i].arrival, w.requests[i].arrival);
    }
}

TEST(BenchServeWorkloads, BadLinesNameTheirLine) {
    auto message = [](const std::string& text) {
        try {
            parse_workload(text);
        } catch (const std::runtime_error& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    const std::string ok = R"({"route":"/v1/completions","body":{"prompt":"x"}})";
    EXPECT_EQ(parse_workload(ok + "\n\n").size(), 1u);
    EXPECT_EQ(parse_workload(ok)[0].label, "line-1");
    EXPECT_NE(message(ok + "\nnot json").find("line 2"), std::string::npos);
    EXPECT_NE(message(R"({"route":"/v1/embeddings","body":{}})").find("route"), std::string::npos);
    EXPECT_NE(message(R"({"route":"/v1/completions","body":"x"})").find("body"), std::string::npos);
    EXPECT_NE(message(R"({"route":"/v1/completions","body":{},"wave":-1})").find("wave"), std::string::npos);
    EXPECT_NE(message(R"({"route":"/v1/completions","body":{},"arrival":"soon"})").find("arrival"), std::string::npos);
    EXPECT_NE(message(R"({"label":"a","route":"/v1/completions","body":{}})"
                      "\n"
                      R"({"label":"a","route":"/v1/completions","body":{}})")
                  .find("used twice"),
              std::string::npos);
}

TEST(BenchServeWorkloads, RetypedShareCountsTokensInLongSharedRuns) {
    std::vector<int32_t> earlier, later;
    for (int32_t i = 0; i < 40; ++i) earlier.push_back(i);
    for (int32_t i = 10; i < 30; ++i) later.push_back(i);  // 20 ids shared in one run
    for (int32_t i = 0; i < 20; ++i) later.push_back(1000 + i);
    EXPECT_DOUBLE_EQ(retyped_share(earlier, later, 16), 0.5);
    EXPECT_DOUBLE_EQ(retyped_share(earlier, later, 21), 0.0);
    EXPECT_DOUBLE_EQ(retyped_share(std::string("abcdef"), std::string("xxcdef"), 3), 4.0 / 6.0);
}

}  // namespace
}  // namespace tf::bench
