// The greedy cases of the Hugging Face oracle file (prompt ids, greedy ids,
// the top-5 ids and logits at the prompt's end), shared by the CPU and GPU
// oracle tests.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "tests/model/test_support.h"

namespace tf::model::testing {

struct GreedyCase {
    std::vector<int32_t> prompt, greedy, top5_ids;
    std::vector<float> top5_logits;
};

inline std::vector<GreedyCase> oracle_cases() {
    const std::string path = fixture_path("tinycode_hf_public.jsonl");
    std::ifstream in(path);
    EXPECT_TRUE(in) << path;
    std::vector<GreedyCase> cases;
    std::string line;
    while (std::getline(in, line)) {
        auto j = nlohmann::json::parse(line);
        if (j.at("kind") != "greedy") continue;
        cases.push_back({j.at("prompt_ids").get<std::vector<int32_t>>(), j.at("greedy_ids").get<std::vector<int32_t>>(),
                         j.at("last_top5_ids").get<std::vector<int32_t>>(),
                         j.at("last_top5_logits").get<std::vector<float>>()});
    }
    return cases;
}

}  // namespace tf::model::testing
