#include "http/router.h"

#include <nlohmann/json.hpp>
#include <string_view>

#include "http/anthropic_response.h"
#include "http/api_error.h"
#include "http/auth.h"
#include "http/recall_json.h"

namespace tf::http {

namespace {

using nlohmann::json;

constexpr const char* kJson = "application/json";

struct Route {
    std::string_view path;
    std::vector<std::string_view> methods;
};

const std::vector<Route>& routes() {
    static const std::vector<Route> table = {
        {"/v1/completions", {"POST"}},  {"/v1/chat/completions", {"POST"}}, {"/v1/messages", {"POST"}},
        {"/v1/messages/count_tokens", {"POST"}}, {"/v1/responses", {"POST"}}, {"/v1/models", {"GET"}},   {"/v1/recall", {"GET", "DELETE"}},
        {"/health", {"GET"}},           {"/metrics", {"GET"}},
        {"/tokenize", {"POST"}},        {"/detokenize", {"POST"}},          {"/apply-template", {"POST"}},
    };
    return table;
}

// The tokenizer routes show the chat template and vocabulary, which a key
// guards as it guards the model's replies (llama.cpp's server asks for it too).
bool needs_key(std::string_view path) {
    return path == "/v1" || path.starts_with("/v1/") || path == "/tokenize" || path == "/detokenize" ||
           path == "/apply-template";
}

// Anthropic's routes answer errors in Anthropic's shape and take the key
// from x-api-key too, as its SDKs and Claude Code send it.
bool anthropic_route(std::string_view path) { return path == "/v1/messages" || path.starts_with("/v1/messages/"); }

}  // namespace

Router::Router(actors::Service& service, const tokenizer::Tokenizer& tokenizer, RouterOptions options)
    : service_(service), tokenizer_(tokenizer), options_(std::move(options)) {}

void Router::handle(HttpRequest request, std::shared_ptr<Responder> responder) {
    try {
        route(request, responder);
    } catch (const ApiError& error) {
        const bool anthropic = anthropic_route(request.path);
        responder->respond(error.status, kJson, anthropic ? anthropic_error_body(error) : error.body(), error.headers);
    } catch (const std::exception& error) {
        ApiError internal(500, std::string("internal error: ") + error.what());
        responder->respond(500, kJson, anthropic_route(request.path) ? anthropic_error_body(internal) : internal.body());
    }
}

void Router::route(const HttpRequest& request, const std::shared_ptr<Responder>& responder) {
    const Clock::time_point arrival = Clock::now();
    // The key is checked before the route is looked up, so a client without
    // it learns nothing about which /v1/ routes exist.
    const bool key_header = anthropic_route(request.path) && !request.x_api_key.empty();
    const bool key_ok = authorized(options_.api_key, request.authorization) ||
                        (key_header && constant_time_equal(request.x_api_key, options_.api_key));
    if (needs_key(request.path) && !key_ok) {
        ApiError error(401, key_header                        ? "invalid API key in the x-api-key header"
                            : request.authorization.empty() ? "missing API key: send the header 'Authorization: Bearer <key>'"
                                                            : "invalid API key in the Authorization header");
        error.headers.emplace_back("WWW-Authenticate", "Bearer");
        throw error;
    }
    const Route* found = nullptr;
    for (const Route& r : routes()) {
        if (r.path == request.path) found = &r;
    }
    if (!found) throw ApiError(404, "no route " + request.method + " " + request.path);
    bool allowed = false;
    std::string allow;
    for (std::string_view method : found->methods) {
        allowed = allowed || method == request.method;
        allow += (allow.empty() ? "" : ", ") + std::string(method);
    }
    if (!allowed) {
        ApiError error(405, request.method + " is not allowed on " + request.path + " (allowed: " + allow + ")");
        error.headers.emplace_back("Allow", allow);
        throw error;
    }

    const std::string& path = request.path;
    if (path == "/v1/completions") return completions(request, responder, arrival);
    if (path == "/v1/chat/completions") return chat_completions(request, responder, arrival);
    if (path == "/v1/messages") return messages(request, responder, arrival);
    if (path == "/v1/messages/count_tokens") return count_tokens(request, responder);
    if (path == "/v1/responses") return responses(request, responder, arrival);
    if (path == "/tokenize") return tokenize(request, responder);
    if (path == "/detokenize") return detokenize(request, responder);
    if (path == "/apply-template") return apply_template(request, responder);
    if (path == "/v1/models") return models(responder);
    if (path == "/v1/recall") return request.method == "GET" ? get_recall(responder) : delete_recall(responder);
    if (path == "/metrics") return metrics(responder);
    if (path == "/health") return responder->respond(200, kJson, R"({"status":"ok"})");
}

void Router::models(const std::shared_ptr<Responder>& responder) const {
    const json model = {{"id", options_.served_model_name},
                        {"object", "model"},
                        {"created", options_.created},
                        {"owned_by", "tensorfold"},
                        {"max_model_len", options_.ctx_size}};
    responder->respond(200, kJson, json{{"object", "list"}, {"data", json::array({model})}}.dump());
}

void Router::metrics(const std::shared_ptr<Responder>& responder) {
    const actors::ServiceMetrics service = service_.metrics();
    const actors::RecallReport recall = service_.recall_report();
    responder->respond(200, MetricsText::kContentType, render_metrics(service, recall, timings_.snapshot(), options_.facts));
}

void Router::get_recall(const std::shared_ptr<Responder>& responder) {
    responder->respond(200, kJson, recall_report_json(service_.recall_report()));
}

void Router::delete_recall(const std::shared_ptr<Responder>& responder) {
    const recall::EraseResult result = service_.delete_recall();
    if (!result.ok()) throw erase_error(result);
    // Success: the chunk files are gone and memory, landing statistics and
    // counters were reset; the reply embeds the fresh report (docs/recall.md, "DELETE").
    const nlohmann::ordered_json body = {{"object", "recall.deleted"},
                                         {"deleted", true},
                                         {"message", result.message},
                                         {"recall", nlohmann::ordered_json::parse(recall_report_json(service_.recall_report()))}};
    responder->respond(200, kJson, body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
}

}  // namespace tf::http
