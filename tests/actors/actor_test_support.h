// What the actor tests share: a request's collected events.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "actors/service.h"

namespace tf::actors::testing {

// Collects one request's events and waits for its last one.
class Reply {
public:
    EventCallback callback() {
        return [this](StreamEvent event) {
            std::lock_guard lock(mutex_);
            tokens_.insert(tokens_.end(), event.tokens.begin(), event.tokens.end());
            text_ += event.text;
            ++events_;
            if (event.finish != engine::FinishReason::running) {
                finish_ = event.finish;
                counters_ = event.counters;
            }
            done_.notify_all();
        };
    }
    // Waits for the request's first event: it has a slot and is generating.
    bool wait_for_first_event() {
        std::unique_lock lock(mutex_);
        return done_.wait_for(lock, std::chrono::seconds(120), [&] { return events_ > 0; });
    }
    std::vector<model::TokenId> wait() {
        std::unique_lock lock(mutex_);
        EXPECT_TRUE(done_.wait_for(lock, std::chrono::seconds(120), [&] { return finish_ != engine::FinishReason::running; }));
        return tokens_;
    }
    engine::FinishReason finish() {
        std::lock_guard lock(mutex_);
        return finish_;
    }
    engine::DraftCounters counters() {
        std::lock_guard lock(mutex_);
        return counters_;
    }
    int events() {
        std::lock_guard lock(mutex_);
        return events_;
    }

private:
    std::mutex mutex_;
    std::condition_variable done_;
    std::vector<model::TokenId> tokens_;
    std::string text_;
    int events_ = 0;
    engine::FinishReason finish_ = engine::FinishReason::running;
    engine::DraftCounters counters_;
};

}  // namespace tf::actors::testing
