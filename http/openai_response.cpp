#include "http/openai_response.h"

#include <nlohmann/json.hpp>

namespace tf::http {

namespace {

using nlohmann::json;

json usage_json(const Usage& usage) {
    return {{"prompt_tokens", usage.prompt_tokens},
            {"completion_tokens", usage.completion_tokens},
            {"total_tokens", usage.prompt_tokens + usage.completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", usage.cached_tokens}}}};
}

json finish(const Choice& choice) { return choice.finish_reason ? json(*choice.finish_reason) : json(nullptr); }

json envelope(const ResponseHeader& header, const char* object) {
    return {{"id", header.id}, {"object", object}, {"created", header.created}, {"model", header.model}};
}

// The optional vLLM fields, only where they were asked for.
void add_token_ids(json& choice, const Choice& c, bool with_prompt) {
    if (c.token_ids) choice["token_ids"] = *c.token_ids;
    if (with_prompt && c.prompt_token_ids) choice["prompt_token_ids"] = *c.prompt_token_ids;
}

// Completions' legacy form: parallel lists, alternatives as a map.
json completion_logprobs(const Choice& c) {
    if (!c.logprobs) return nullptr;
    json tokens = json::array(), logprobs = json::array(), top = json::array(), offsets = json::array();
    int64_t offset = c.text_offset;
    for (const LogprobEntry& e : *c.logprobs) {
        tokens.push_back(e.token);
        logprobs.push_back(e.logprob);
        json alternatives = json::object();
        for (const auto& [token, logprob] : e.top) {
            if (!alternatives.contains(token)) alternatives[token] = logprob;
        }
        top.push_back(std::move(alternatives));
        offsets.push_back(offset);
        offset += static_cast<int64_t>(e.token.size());
    }
    return {{"tokens", tokens}, {"token_logprobs", logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

json token_bytes(const std::string& token) {
    json bytes = json::array();
    for (unsigned char b : token) bytes.push_back(static_cast<int>(b));
    return bytes;
}

// Chat's form: one object per token with its bytes and alternatives.
json chat_logprobs(const Choice& c) {
    if (!c.logprobs) return nullptr;
    json content = json::array();
    for (const LogprobEntry& e : *c.logprobs) {
        json top = json::array();
        for (const auto& [token, logprob] : e.top) {
            top.push_back({{"token", token}, {"logprob", logprob}, {"bytes", token_bytes(token)}});
        }
        content.push_back(
            {{"token", e.token}, {"logprob", e.logprob}, {"bytes", token_bytes(e.token)}, {"top_logprobs", top}});
    }
    return {{"content", content}};
}

// Replies may end inside a multi-byte character (max_tokens cut it); the
// detokenizer holds such bytes back, and replace keeps dump() from throwing
// if anything invalid slips through.
std::string dump(const json& body) { return body.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

std::string completion_body(const ResponseHeader& header, const std::vector<Choice>& choices, const Usage& usage) {
    json body = envelope(header, "text_completion");
    body["choices"] = json::array();
    for (const Choice& c : choices) {
        json choice = {
            {"index", c.index}, {"text", c.text}, {"logprobs", completion_logprobs(c)}, {"finish_reason", finish(c)}};
        add_token_ids(choice, c, true);
        body["choices"].push_back(std::move(choice));
    }
    body["usage"] = usage_json(usage);
    return dump(body);
}

std::string chat_body(const ResponseHeader& header, const std::vector<Choice>& choices, const Usage& usage) {
    json body = envelope(header, "chat.completion");
    body["choices"] = json::array();
    for (const Choice& c : choices) {
        json message = {{"role", "assistant"}, {"content", c.text}};
        // Both names: reasoning_content as DeepSeek and vLLM write it,
        // reasoning as newer servers and clients read it.
        if (!c.reasoning.empty()) {
            message["reasoning_content"] = c.reasoning;
            message["reasoning"] = c.reasoning;
        }
        if (!c.tool_calls.empty()) {
            if (c.text.empty()) message["content"] = nullptr;
            json calls = json::array();
            for (const ToolCall& call : c.tool_calls) {
                calls.push_back({{"id", call.id},
                                 {"type", "function"},
                                 {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
            }
            message["tool_calls"] = std::move(calls);
        }
        json choice = {{"index", c.index}, {"message", std::move(message)}, {"logprobs", chat_logprobs(c)}, {"finish_reason", finish(c)}};
        add_token_ids(choice, c, false);
        body["choices"].push_back(std::move(choice));
        // A chat request has one prompt: its ids go at the top level.
        if (c.prompt_token_ids && !body.contains("prompt_token_ids")) body["prompt_token_ids"] = *c.prompt_token_ids;
    }
    body["usage"] = usage_json(usage);
    return dump(body);
}

std::string completion_chunk(const ResponseHeader& header, const Choice& choice, bool usage_null) {
    json body = envelope(header, "text_completion");
    json c = {{"index", choice.index},
              {"text", choice.text},
              {"logprobs", completion_logprobs(choice)},
              {"finish_reason", finish(choice)}};
    add_token_ids(c, choice, false);
    body["choices"] = json::array({std::move(c)});
    if (usage_null) body["usage"] = nullptr;
    return dump(body);
}

std::string chat_chunk(const ResponseHeader& header, const Choice& choice, bool first, bool usage_null) {
    json body = envelope(header, "chat.completion.chunk");
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!choice.text.empty() || (first && !choice.finish_reason)) delta["content"] = choice.text;
    if (!choice.reasoning.empty()) {
        delta["reasoning_content"] = choice.reasoning;
        delta["reasoning"] = choice.reasoning;
    }
    json c = {
        {"index", choice.index}, {"delta", delta}, {"logprobs", chat_logprobs(choice)}, {"finish_reason", finish(choice)}};
    add_token_ids(c, choice, false);
    body["choices"] = json::array({std::move(c)});
    if (usage_null) body["usage"] = nullptr;
    return dump(body);
}

std::string chat_tool_call_chunk(const ResponseHeader& header, int32_t choice_index, const ReplyDelta& delta,
                                 bool usage_null) {
    json call = {{"index", delta.index}};
    if (delta.opens) {
        call["id"] = delta.id;
        call["type"] = "function";
        call["function"] = {{"name", delta.name}, {"arguments", ""}};
    } else {
        call["function"] = {{"arguments", delta.arguments}};
    }
    json body = envelope(header, "chat.completion.chunk");
    body["choices"] = json::array({{{"index", choice_index},
                                    {"delta", {{"tool_calls", json::array({std::move(call)})}}},
                                    {"logprobs", nullptr},
                                    {"finish_reason", nullptr}}});
    if (usage_null) body["usage"] = nullptr;
    return dump(body);
}

std::string usage_chunk(const ResponseHeader& header, bool chat, const Usage& usage) {
    json body = envelope(header, chat ? "chat.completion.chunk" : "text_completion");
    body["choices"] = json::array();
    body["usage"] = usage_json(usage);
    return dump(body);
}

std::string sse_event(const std::string& payload) { return "data: " + payload + "\n\n"; }

}  // namespace tf::http
