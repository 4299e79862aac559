// Deterministic replay of the actor system under CAF's test scheduler: the
// same requests, disk readings and unlink outcomes, delivered in the same
// order, give the same replies, record contents and counters. Each scenario
// below also checks one rule of docs/recall.md.
#include <gtest/gtest.h>

#include <caf/scheduler/test_coordinator.hpp>

#include <fstream>
#include <sstream>

#include "../engine/engine_fixture.h"
#include "actors/actor_service.h"
#include "actors/stream_actor.h"

namespace tf::actors {
namespace {

using namespace engine::testing;

constexpr auto kDiskCheck = std::chrono::milliseconds(1000);

caf::actor_system_config& deterministic(caf::actor_system_config& config) {
    config.set("scheduler.policy", caf::atom("testing"));
    config.set("logger.file-verbosity", caf::atom("quiet"));
    config.set("logger.console-verbosity", caf::atom("quiet"));
    return config;
}

// The outside world the record sees, scripted: free disk and unlink outcomes.
struct World {
    uint64_t free_bytes = uint64_t{100} << 30;
    bool unlink_fails = false;

    recall::FsOps fs() {
        recall::FsOps ops = recall::FsOps::real();
        ops.free_bytes = [this](const std::string&) -> std::optional<uint64_t> { return free_bytes; };
        auto real_unlink = ops.unlink;
        ops.unlink = [this, real_unlink](const std::string& path) {
            if (unlink_fails && path.find("chunk-") != std::string::npos) {
                errno = EBUSY;
                return -1;
            }
            return real_unlink(path);
        };
        return ops;
    }
};

// One run of the actor system on the test scheduler, with a trace of
// everything that came out of it.
class Run {
public:
    Run(const std::filesystem::path& dir, World& world, bool read_only = false)
        : system_(deterministic(config_)),
          sched_(dynamic_cast<caf::scheduler::test_coordinator&>(system_.scheduler())),
          self_(system_, true) {
        recall::RecordOptions options;
        options.dir = dir.string();
        options.read_only = read_only;
        options.model = "tinycode";
        options.tokenizer = test_tokenizer_identity();
        options.fs = world.fs();
        record_ = recall::Record::open(options);
        service_.backend = &tinycode();
        service_.record = record_.get();
        service_.disk_check_interval = kDiskCheck;
        actors_ = spawn_long_lived_actors(system_, service_, /*detach_lane=*/false);
        drafter_ = std::make_unique<engine::Drafter>(service_.cost, service_.engine.drafter, record_.get());
    }
    ~Run() {
        actors_.shutdown();
        sched_.run();
    }

    // Starts a request; its events go to the trace. Returns the stream actor.
    stream_actor start(const std::string& name, engine::GenerationRequest request) {
        StreamOptions o;
        o.handle = next_handle_++;
        o.request = std::move(request);
        o.on_event = [this, name](StreamEvent e) {
            std::ostringstream line;
            line << name << ":";
            for (auto t : e.tokens) line << " " << t;
            line << " [" << engine::to_string(e.finish) << "]";
            trace_.push_back(line.str());
            if (e.finish != engine::FinishReason::running) finished_[name] = e.finish;
        };
        o.context_size = tinycode().config().max_position_embeddings;
        o.drafter = drafter_.get();
        o.lane = actors_.lane;
        o.readers = actors_.readers;
        o.writer = actors_.writer;
        return spawn_stream(system_, std::move(o));
    }

    recall::EraseResult erase() {
        auto handle = self_->request(actors_.supervisor, caf::infinite, erase_atom::value);
        sched_.run();
        recall::EraseResult result;
        handle.receive([&](recall::EraseResult& r) { result = r; }, [&](caf::error&) { ADD_FAILURE(); });
        trace_.push_back("DELETE: " + std::to_string(static_cast<int>(result.outcome)) + " " +
                         std::filesystem::path(result.failed_file).filename().string());
        return result;
    }

    recall::RecordStats stats() {
        auto handle = self_->request(actors_.supervisor, caf::infinite, report_atom::value);
        sched_.run();
        RecallReport report;
        handle.receive([&](RecallReport& r) { report = r; }, [&](caf::error&) { ADD_FAILURE(); });
        std::ostringstream line;
        line << "report: " << recall::to_string(report.stats.state) << " ids " << report.stats.ids << " chunks "
             << report.stats.chunks << " adds " << report.stats.adds << " copies "
             << report.stats.landing.copies_offered << " landed " << report.stats.landing.tokens_landed;
        trace_.push_back(line.str());
        return report.stats;
    }

    ServiceMetrics metrics() {
        auto handle = self_->request(actors_.lane, caf::infinite, metrics_atom::value);
        sched_.run();
        ServiceMetrics m;
        handle.receive([&](ServiceMetrics& r) { m = r; }, [&](caf::error&) { ADD_FAILURE(); });
        trace_.push_back("metrics: running " + std::to_string(m.requests_running) + " rounds " +
                         std::to_string(m.rounds_total) + " generated " + std::to_string(m.generation_tokens_total));
        return m;
    }

    // The supervisor's free-disk probe fires.
    void disk_check() {
        sched_.advance_time(kDiskCheck);
        sched_.run();
    }

    caf::scheduler::test_coordinator& sched() { return sched_; }
    const std::vector<std::string>& trace() const { return trace_; }
    engine::FinishReason finished(const std::string& name) { return finished_[name]; }
    void note(const std::string& line) { trace_.push_back(line); }

private:
    caf::actor_system_config config_;
    caf::actor_system system_;
    caf::scheduler::test_coordinator& sched_;
    caf::scoped_actor self_;
    std::unique_ptr<recall::Record> record_;
    ActorServiceOptions service_;
    LongLivedActors actors_;
    std::unique_ptr<engine::Drafter> drafter_;
    uint64_t next_handle_ = 1;
    std::vector<std::string> trace_;
    std::map<std::string, engine::FinishReason> finished_;
};

engine::GenerationRequest request(int which, int32_t max_tokens = 20) {
    std::vector<model::TokenId> prompt;
    for (int i = 0; i < 24; ++i) prompt.push_back((which * 131 + i * 37) % 8000);
    return make_request(prompt, which % 2 ? 0.8f : 0.0f, 1.0f, 100 + which, max_tokens);
}

std::string chunk_bytes(const std::filesystem::path& dir) {
    std::string all;
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        if (entry.path().filename().string().rfind("chunk-", 0) == 0) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
        std::ifstream in(file, std::ios::binary);
        all += file.filename().string() + ":" + std::string(std::istreambuf_iterator<char>(in), {});
    }
    return all;
}

// The whole scenario; returns its trace and the record's bytes.
std::pair<std::vector<std::string>, std::string> scenario() {
    TempDir dir("replay");
    World world;
    std::vector<std::string> trace;
    {
        Run run(dir.path(), world);
        // Two requests together, then one regenerated: copies land.
        run.start("a", request(1));
        run.start("b", request(2));
        run.sched().run();
        run.start("a-again", request(1));
        run.sched().run();
        const recall::RecordStats filled = run.stats();
        EXPECT_GT(filled.ids, 0u);
        EXPECT_GT(filled.landing.copies_offered, 0u);

        // DELETE racing a writer add: both are queued before either runs.
        run.start("c", request(3));
        run.sched().run(3);  // the stream has asked for its KV; its add comes later
        EXPECT_TRUE(run.erase().ok());
        run.sched().run();
        run.stats();

        // A DELETE that cannot unlink a chunk fails naming the file, and adds
        // stay paused until a later DELETE succeeds (docs/recall.md, "DELETE"
        // and "States", `paused-delete`).
        run.start("d", request(4));
        run.sched().run();
        world.unlink_fails = true;
        const recall::EraseResult failed = run.erase();
        EXPECT_EQ(failed.outcome, recall::EraseResult::Outcome::failed);
        EXPECT_NE(failed.failed_file.find("chunk-"), std::string::npos);
        const uint64_t ids_paused = run.stats().ids;
        EXPECT_EQ(run.stats().state, recall::RecallState::paused_delete);
        run.start("e", request(5));
        run.sched().run();
        EXPECT_EQ(run.stats().ids, ids_paused) << "nothing is added while paused";
        world.unlink_fails = false;
        EXPECT_TRUE(run.erase().ok());
        EXPECT_EQ(run.stats().state, recall::RecallState::writing);
        run.start("f", request(6));
        run.sched().run();
        EXPECT_GT(run.stats().ids, 0u) << "adds resume after a DELETE deletes every chunk";

        // Low free space pauses adds but requests still complete, and adds
        // resume once space is back (docs/recall.md, "States", `paused-disk`).
        world.free_bytes = uint64_t{1} << 30;
        run.disk_check();
        const uint64_t ids_low_disk = run.stats().ids;
        EXPECT_EQ(run.stats().state, recall::RecallState::paused_disk);
        run.start("g", request(7));
        run.sched().run();
        EXPECT_EQ(run.finished("g"), engine::FinishReason::length) << "serving goes on";
        EXPECT_EQ(run.stats().ids, ids_low_disk);
        world.free_bytes = uint64_t{100} << 30;
        run.disk_check();
        EXPECT_EQ(run.stats().state, recall::RecallState::writing);
        run.start("h", request(8));
        run.sched().run();
        EXPECT_GT(run.stats().ids, ids_low_disk) << "adds resume when space returns";

        // A stream cancelled mid-reply: once its first tokens are out (it is
        // then alone, so its rounds run on the lane), a cancel reaches it.
        stream_actor long_one = run.start("cancelled", request(9, 400));
        auto has_spoken = [&] {
            for (const std::string& line : run.trace()) {
                if (line.rfind("cancelled:", 0) == 0) return true;
            }
            return false;
        };
        while (!has_spoken() && run.sched().try_run_once()) {
        }
        EXPECT_TRUE(has_spoken());
        // The stream has just lent itself to the lane; its actor takes the
        // cancel before the lane starts the lone rounds, so the reclaim
        // reaches the lane one round later.
        caf::anon_send(long_one, cancel_atom::value);
        run.sched().prioritize(long_one);
        run.sched().run_once();
        run.sched().run();
        EXPECT_EQ(run.finished("cancelled"), engine::FinishReason::cancelled);
        EXPECT_EQ(run.metrics().requests_running, 0) << "its KV is freed";

        // A following or read-only server is refused when it tries to delete
        // (docs/recall.md, "DELETE").
        {
            Run follower(dir.path(), world);
            EXPECT_EQ(follower.stats().state, recall::RecallState::following);
            EXPECT_EQ(follower.erase().outcome, recall::EraseResult::Outcome::refused);
            for (const auto& line : follower.trace()) run.note("follower " + line);
        }
        trace = run.trace();
    }
    return {trace, chunk_bytes(dir.path())};
}

TEST(Replay, TheSameMessagesInTheSameOrderGiveTheSameRepliesRecordAndCounters) {
    auto [first_trace, first_record] = scenario();
    auto [second_trace, second_record] = scenario();
    ASSERT_GT(first_trace.size(), 20u);
    if (std::getenv("TF_PRINT_TRACE")) {
        for (const auto& line : first_trace) std::printf("%s\n", line.substr(0, 100).c_str());
    }
    EXPECT_EQ(first_trace, second_trace);
    EXPECT_EQ(first_record, second_record);
    EXPECT_FALSE(first_record.empty());
}

}  // namespace
}  // namespace tf::actors
