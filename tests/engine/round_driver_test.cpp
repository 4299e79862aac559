// RoundDriver on a scripted backend: what a round puts into the forward, and
// how sampled rows become verdicts and a trimmed KV cache. The backend's
// "model" always continues a fixed cycle, so every expected token is known.
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "engine/round_driver.h"

namespace tf::engine {
namespace {

constexpr int32_t kPeriod = 8;

// The token at `position` of stream `kv`'s sequence: a cycle of kPeriod ids,
// shifted per stream so that two streams' tokens differ.
TokenId cycle_token(StreamId kv, int32_t position) { return 100 + (position + 3 * kv) % kPeriod; }

// Samples, at each row, the cycle's next token; keeps only cache lengths,
// and records every forward's rows and sampler count.
class ScriptedBackend : public model::Backend {
public:
    const model::ModelConfig& config() const override { return config_; }
    void open_stream(StreamId kv, int32_t /*capacity*/) override { lengths_[kv] = 0; }
    void close_stream(StreamId kv) override { lengths_.erase(kv); }
    int32_t stream_length(StreamId kv) const override { return lengths_.at(kv); }
    void truncate(StreamId kv, int32_t length) override { lengths_.at(kv) = std::min(lengths_.at(kv), length); }
    void copy_prefix(StreamId /*from*/, StreamId to, int32_t length) override { lengths_.at(to) = length; }
    void forward(std::span<const model::Row> rows, std::span<const model::SamplingParams> samplers,
                 model::RowOutputs& out) override {
        forwards.emplace_back(rows.begin(), rows.end());
        sampler_counts.push_back(samplers.size());
        out.tokens.clear();
        for (const model::Row& row : rows) {
            EXPECT_EQ(row.position, lengths_.at(row.stream)) << "a row must continue its stream's cache";
            ++lengths_.at(row.stream);
            if (row.sampler < 0) continue;
            EXPECT_LT(static_cast<size_t>(row.sampler), samplers.size());
            out.tokens.push_back(cycle_token(row.stream, row.position + 1));
        }
    }

    double experts_touched() const override { return touched; }

    std::vector<std::vector<model::Row>> forwards;
    std::vector<size_t> sampler_counts;
    double touched = 0;  // what every forward reports as its experts

private:
    model::ModelConfig config_;
    std::map<StreamId, int32_t> lengths_;
};

// A stream whose prompt is `cycles` turns of its cycle, on cache `kv`.
Stream cycle_stream(ScriptedBackend& backend, StreamId kv, int32_t prompt_length) {
    GenerationRequest spec;
    for (int32_t p = 0; p < prompt_length; ++p) spec.prompt.push_back(cycle_token(kv, p));
    spec.max_tokens = 40;
    backend.open_stream(kv, 128);
    return Stream(1 + static_cast<RequestId>(kv), kv, std::move(spec), 0, 128, nullptr);
}

// Reads the whole prompt in one round and lands the first reply token.
void prefill(RoundDriver& driver, Stream& stream) {
    driver.add_prefill(stream, 1 << 20);
    land_verdict(stream, driver.run().front());
}

Draft own_draft(std::vector<TokenId> tokens) { return {DraftSource::own_context, 3, std::move(tokens)}; }

TEST(RoundDriver, RunsEveryPartsRowsInOneForwardInTheOrderAdded) {
    ScriptedBackend backend;
    RoundDriver driver(backend);
    Stream a = cycle_stream(backend, 0, 3), b = cycle_stream(backend, 1, 2);
    driver.add_prefill(a, 8);
    driver.add_prefill(b, 8);
    driver.run();
    ASSERT_EQ(backend.forwards.size(), 1u);
    std::vector<std::pair<StreamId, int32_t>> ran;
    for (const model::Row& row : backend.forwards[0]) ran.emplace_back(row.stream, row.position);
    EXPECT_EQ(ran, (std::vector<std::pair<StreamId, int32_t>>{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}}));
    EXPECT_EQ(backend.sampler_counts[0], 2u) << "one sampler per part";
    EXPECT_EQ(backend.forwards[0][2].sampler, 0) << "a's last prompt row samples with a's parameters";
    EXPECT_EQ(backend.forwards[0][4].sampler, 1) << "b's with b's";
}

TEST(RoundDriver, RowsRunOnTheCacheTheCallerNames) {
    ScriptedBackend backend;
    RoundDriver driver(backend);
    // A stream actor's Stream calls its cache 0; the lane knows it as 5.
    GenerationRequest spec;
    spec.prompt = {cycle_token(5, 0), cycle_token(5, 1)};
    spec.max_tokens = 4;
    Stream remote(9, 0, spec, 0, 16, nullptr);
    backend.open_stream(5, 16);
    driver.add(remote.next_rows(8, Draft{}), 5);
    const Verdict verdict = driver.run().front();
    for (const model::Row& row : backend.forwards[0]) EXPECT_EQ(row.stream, 5);
    EXPECT_EQ(driver.part(0).kv, 5);
    EXPECT_EQ(verdict.tokens, std::vector<TokenId>{cycle_token(5, 2)});
    EXPECT_EQ(driver.stream(0), nullptr) << "rows from a message have no Stream here";
}

TEST(RoundDriver, APromptChunkShortOfTheEndSamplesNothingAndStaysCached) {
    ScriptedBackend backend;
    RoundDriver driver(backend);
    Stream stream = cycle_stream(backend, 0, 6);
    driver.add_prefill(stream, 4);
    EXPECT_TRUE(driver.run().front().tokens.empty());
    EXPECT_EQ(backend.stream_length(0), 4);
    EXPECT_TRUE(land_verdict(stream, driver.verdicts().front()).update.tokens.empty());
    driver.add_prefill(stream, 4);
    EXPECT_EQ(driver.row_count(), 2) << "only what is left of the prompt";
    EXPECT_EQ(driver.run().front().tokens, std::vector<TokenId>{cycle_token(0, 6)});
    EXPECT_EQ(backend.stream_length(0), 6);
}

TEST(RoundDriver, DraftsLandUpToTheFirstOneTheModelDisagreesWith) {
    ScriptedBackend backend;
    RoundDriver driver(backend);
    Stream stream = cycle_stream(backend, 0, 6);
    prefill(driver, stream);  // pending: the token at position 6
    driver.add(stream.next_rows(0, own_draft({cycle_token(0, 7), cycle_token(0, 8), 999, cycle_token(0, 10)})), 0,
               &stream);
    const Verdict verdict = driver.run().front();
    EXPECT_EQ(verdict.landed_drafts, 2);
    EXPECT_EQ(verdict.tokens, (std::vector<TokenId>{cycle_token(0, 7), cycle_token(0, 8), cycle_token(0, 9)}));
    EXPECT_EQ(backend.stream_length(0), 9) << "the rows of 999 and after leave the cache";
    land_verdict(stream, verdict);
    EXPECT_EQ(stream.kv_length(), 9);
    EXPECT_EQ(stream.reply(),
              (std::vector<TokenId>{cycle_token(0, 6), cycle_token(0, 7), cycle_token(0, 8), cycle_token(0, 9)}));
}

TEST(RoundDriver, EachPartsVerdictReadsOnlyTheTokensItsRowsSampled) {
    ScriptedBackend backend;
    RoundDriver driver(backend);
    Stream a = cycle_stream(backend, 0, 10), b = cycle_stream(backend, 1, 4), c = cycle_stream(backend, 2, 4);
    prefill(driver, c);
    driver.add_prefill(a, 5);                                                // samples nothing
    driver.add_prefill(b, 8);                                                // samples one
    driver.add(c.next_rows(0, own_draft({cycle_token(2, 5), 999})), 2, &c);  // samples three
    const std::vector<Verdict>& verdicts = driver.run();
    ASSERT_EQ(verdicts.size(), 3u);
    EXPECT_TRUE(verdicts[0].tokens.empty());
    EXPECT_EQ(verdicts[1].tokens, std::vector<TokenId>{cycle_token(1, 4)});
    EXPECT_EQ(verdicts[2].tokens, (std::vector<TokenId>{cycle_token(2, 5), cycle_token(2, 6)}));
}

// Every verdict says how many decode rows the whole round held (prompt
// chunks left out), so that a stream can price its next copy by the
// others' share (Stream::others_last_round).
TEST(RoundDriver, VerdictsCarryTheRoundsDecodeRows) {
    ScriptedBackend backend;
    RoundDriver driver(backend);
    Stream a = cycle_stream(backend, 0, 10), b = cycle_stream(backend, 1, 4), c = cycle_stream(backend, 2, 4);
    prefill(driver, b);
    prefill(driver, c);
    driver.add_prefill(a, 5);                                           // 5 prompt rows
    driver.add(b.next_rows(0, own_draft({cycle_token(1, 5)})), 1, &b);  // 2 rows
    Draft copy{DraftSource::record, 20, {cycle_token(2, 5), 999}};
    driver.add(c.next_rows(0, copy), 2, &c);  // 3 rows, 2 of them a record copy
    for (const Verdict& verdict : driver.run()) {
        EXPECT_EQ(verdict.round_rows, 5);
        EXPECT_EQ(verdict.round_copy_rows, 2);
        EXPECT_EQ(verdict.round_plain_parts, 1);
    }
    land_verdict(b, driver.verdicts()[1]);
    land_verdict(c, driver.verdicts()[2]);
    land_verdict(a, driver.verdicts()[0]);
    EXPECT_EQ(b.others_last_round().rows, 3);
    EXPECT_EQ(b.others_last_round().plain_rows, 1) << "c's pending row; its copy's rows left out";
    EXPECT_EQ(b.others_last_round().plain_streams, 0);
    EXPECT_EQ(c.others_last_round().rows, 2);
    EXPECT_EQ(c.others_last_round().plain_rows, 2);
    EXPECT_EQ(c.others_last_round().plain_streams, 1);
    EXPECT_EQ(a.others_last_round().rows, 5) << "a prefilling stream sees every decode row as another's";
    EXPECT_EQ(a.others_last_round().plain_streams, 1);
}

TEST(RoundDriver, DecodeRoundsTeachAMixturesPricingTheExpertsTheyRead) {
    ScriptedBackend backend;
    ExpertCalibration calibration;
    for (int32_t m = 1; m <= 8; ++m) {
        calibration.few_cost.push_back(0.01 * m);
        calibration.few_experts.push_back(4);
        calibration.distinct_experts.push_back(4.0 * m);
    }
    calibration.seconds_per_expert = 0.001;
    const auto experts = std::make_shared<ExpertCosts>(calibration, 1.0, 0.5);
    RoundDriver driver(backend, experts);
    Stream a = cycle_stream(backend, 0, 6), b = cycle_stream(backend, 1, 4);
    backend.touched = 30;
    prefill(driver, a);
    EXPECT_DOUBLE_EQ(experts->expected_experts(6), (4 + 24) / 2.0) << "a prompt chunk is no verify round";
    driver.add_prefill(b, 8);
    driver.add(a.next_rows(0, own_draft({cycle_token(0, 7), cycle_token(0, 8)})), 0, &a);  // 3 rows
    driver.run();
    EXPECT_DOUBLE_EQ(experts->expected_experts(7), (4 + 28) / 2.0) << "nor a round with prompt rows in it";
    land_verdict(a, driver.verdicts()[1]);
    land_verdict(b, driver.verdicts()[0]);
    backend.touched = 9;
    driver.add(a.next_rows(0, own_draft({cycle_token(0, 10)})), 0, &a);  // 2 rows
    driver.add(b.next_rows(0, own_draft({cycle_token(1, 6), cycle_token(1, 7)})), 1, &b);  // 3 rows
    driver.run();
    EXPECT_DOUBLE_EQ(experts->expected_experts(5), (0.5 * (4 + 20) / 2.0 + 9) / 1.5) << "the whole round's rows";
}

TEST(RoundDriver, TheFirstAddAfterARunStartsTheNextRound) {
    ScriptedBackend backend;
    RoundDriver driver(backend);
    Stream a = cycle_stream(backend, 0, 3), b = cycle_stream(backend, 1, 3);
    driver.add_prefill(a, 8);
    driver.add_prefill(b, 8);
    driver.run();
    EXPECT_TRUE(driver.empty());
    EXPECT_EQ(driver.part_count(), 2u) << "the round that ran stays readable";
    EXPECT_EQ(driver.verdicts().size(), 2u);
    land_verdict(a, driver.verdicts()[0]);
    driver.add_decoding(a, Drafter(CostCurve::flat(64), DrafterOptions{}));
    EXPECT_EQ(driver.part_count(), 1u);
    driver.run();
    ASSERT_EQ(backend.forwards.size(), 2u);
    for (const model::Row& row : backend.forwards[1]) EXPECT_EQ(row.stream, 0);
    EXPECT_EQ(driver.rounds_run(), 2);
}

TEST(RoundDriver, DecodingStreamsDraftFromTheirOwnContext) {
    ScriptedBackend backend;
    RoundDriver driver(backend);
    const Drafter drafter(CostCurve::flat(64), DrafterOptions{});
    Stream stream = cycle_stream(backend, 0, 2 * kPeriod);
    prefill(driver, stream);
    int64_t rounds = 0;
    while (!stream.finished()) {
        const bool room = stream.draft_room() > 0;
        driver.add_decoding(stream, drafter);
        if (room) {
            EXPECT_FALSE(driver.part(0).draft.empty()) << "the cycle repeats: its next turn is in the context";
        }
        land_verdict(stream, driver.run().front());
        ++rounds;
    }
    EXPECT_EQ(stream.reply().size(), 40u);
    EXPECT_EQ(stream.counters().own_landed, stream.counters().own_drafted) << "the model always continues the cycle";
    EXPECT_LT(rounds, 8) << "whole stretches land per round";
}

TEST(LandVerdict, ReportsARecordCopyForTheRecordsPolicyAndNothingElse) {
    ScriptedBackend backend;
    RoundDriver driver(backend);
    Stream stream = cycle_stream(backend, 0, 6);
    driver.add_prefill(stream, 8);
    EXPECT_FALSE(land_verdict(stream, driver.run().front()).copy_verified) << "a prefill verifies no draft";

    driver.add(stream.next_rows(0, own_draft({cycle_token(0, 7)})), 0, &stream);
    EXPECT_FALSE(land_verdict(stream, driver.run().front()).copy_verified);

    Draft copy{DraftSource::record, 20, {cycle_token(0, 9), 999}};
    driver.add(stream.next_rows(0, copy), 0, &stream);
    const Landing landing = land_verdict(stream, driver.run().front());
    EXPECT_TRUE(landing.copy_verified);
    EXPECT_EQ(stream.last_landed_drafts(), 1);
    EXPECT_EQ(stream.counters().copies_offered, 1);
    EXPECT_EQ(landing.update.tokens, (std::vector<TokenId>{cycle_token(0, 9), cycle_token(0, 10)}));
}

}  // namespace
}  // namespace tf::engine
