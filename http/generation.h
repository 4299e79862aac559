// Router::Generation: one HTTP generation request in flight, shared by the
// generation routes (generation_routes.cpp, messages_routes.cpp). Internal
// to http/: only the routes' sources include it.
#pragma once

#include <algorithm>
#include <memory>
#include <mutex>
#include <random>

#include "http/api_error.h"
#include "http/openai_response.h"
#include "http/reasoning.h"
#include "http/reply_writer.h"
#include "http/router.h"
#include "http/tool_calls.h"

namespace tf::http {

namespace generation_detail {

inline constexpr const char* kJson = "application/json";

inline std::string random_hex(size_t digits) {
    thread_local std::mt19937_64 generator{std::random_device{}()};
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (size_t i = 0; i < digits; ++i) out += kHex[generator() & 15];
    return out;
}

// "tool_calls" when the reply made calls and ended by itself; a reply cut
// by max_tokens stays "length" whatever it holds.
inline const char* finish_reason(engine::FinishReason reason, bool made_tool_calls = false) {
    switch (reason) {
        case engine::FinishReason::stop_token:
        case engine::FinishReason::stop_string: return made_tool_calls ? "tool_calls" : "stop";
        case engine::FinishReason::length:
        case engine::FinishReason::context_full: return "length";
        default: return nullptr;
    }
}

}  // namespace generation_detail

// One HTTP generation request: a choice per prompt. Event callbacks of its
// engine requests run on actor threads, concurrently across choices; every
// member is guarded by `mutex`. Output is produced by pump(), which sends
// whatever is pending in order, so chunks of one choice never overtake each
// other and [DONE] comes last.
struct Router::Generation {
    struct Part {
        std::string prefix;  // echo: the prompt's text, before the reply
        std::string text;    // reply text (non-streaming) or text not yet sent (streaming)
        // return_token_ids only: the reply's ids (non-streaming) or ids not yet
        // sent (streaming), and the prompt's ids. With a writer: all the
        // reply's ids.
        std::vector<int32_t> ids;
        std::vector<int32_t> prompt_ids;
        int64_t prompt_tokens = 0;
        int64_t cached_tokens = 0;  // of prompt_tokens, what the prompt cache held (the last event says)
        int64_t completion_tokens = 0;
        engine::FinishReason finish = engine::FinishReason::running;
        bool first_token_seen = false;
        Clock::time_point last_token_at;  // the latest event that brought tokens
        bool finish_sent = false;
        bool opened = false;  // streaming: role chunk (chat) or echo chunk (completions) sent
        // Streaming chat with tools: takes the calls out of the text as it
        // comes (each choice parses its own reply).
        std::optional<ToolCallStream> tool_stream;
        // Streaming chat where the template marks reasoning: takes the
        // thoughts out of the text before anything else reads it.
        std::optional<ReasoningStream> reasoning_stream;
        std::optional<actors::RequestHandle> handle;
        std::string sent_text;  // with a writer: the reply's text fed to it so far
        // logprobs only: the reply's entries (non-streaming) or those not yet
        // sent (streaming), and where the first of them starts in the text.
        std::vector<LogprobEntry> logprobs;
        int64_t logprob_offset = 0;
    };

    bool chat = false;
    bool stream = false;
    bool include_usage = false;
    bool token_ids = false;  // the request asked for "return_token_ids"
    bool logprobs = false;   // the request asked for logprobs
    const tokenizer::Tokenizer* tokenizer = nullptr;  // writes out the logprobs' tokens
    std::vector<model::TokenId> end_tokens;           // have no text: no logprobs entry
    // Chat: the form tool calls are parsed out of replies in; none when the
    // request offers no tools or says tool_choice "none".
    ToolCallFormat tool_format = ToolCallFormat::none;
    // Chat: the markers of the model's reasoning (none: replies are all
    // content), and whether the prompt left the model inside a thought.
    ReasoningMarkers reasoning;
    bool starts_in_reasoning = false;
    ResponseHeader header;
    // Set for the routes of other APIs (one choice): writes the reply in
    // that API's shape instead of OpenAI's (reply_writer.h). The ids of the
    // reply are kept to tell which stop string ended it.
    std::unique_ptr<ReplyWriter> writer;
    std::vector<std::string> stop_strings;
    std::shared_ptr<Responder> responder;
    Clock::time_point arrival;
    RequestTimings* timings = nullptr;

    std::mutex mutex;
    std::vector<Part> parts;

    // The n choices of one prompt: the same part and request n times, choice
    // j sampling with seed + j (wrapping), so choice 0 is what n = 1 would
    // answer. Choice indexes run prompt by prompt. Each choice is a stream of
    // its own; they find the prompt's KV in the prompt cache like any requests
    // with one prompt.
    void add_choices(std::vector<engine::GenerationRequest>& requests, const Part& part,
                     const engine::GenerationRequest& request, int32_t n) {
        for (int32_t j = 0; j < n; ++j) {
            parts.push_back(part);
            if (stream && tool_format != ToolCallFormat::none) parts.back().tool_stream.emplace(tool_format);
            if (stream && chat && !writer && reasoning.present()) {
                parts.back().reasoning_stream.emplace(reasoning, starts_in_reasoning);
            }
            requests.push_back(request);
            requests.back().sampling.seed = request.sampling.seed + static_cast<uint64_t>(j);
        }
    }
    bool started = false;  // every request submitted; answers may go out
    bool aborted = false;  // a submission failed; the error was answered
    bool gone = false;     // the client went away
    bool answered = false;

    void on_event(size_t index, actors::StreamEvent event) {
        std::lock_guard lock(mutex);
        if (aborted || answered) return;
        Part& part = parts[index];
        if (!event.tokens.empty()) {
            const Clock::time_point now = Clock::now();
            if (!part.first_token_seen) {
                part.first_token_seen = true;
                timings->observe_first_token(now - arrival);
            } else {
                timings->observe_token_gap(now - part.last_token_at, event.tokens.size());
            }
            part.last_token_at = now;
        }
        part.completion_tokens += static_cast<int64_t>(event.tokens.size());
        part.text += event.text;
        if (token_ids || writer) part.ids.insert(part.ids.end(), event.tokens.begin(), event.tokens.end());
        if (logprobs) add_logprobs(part, event);
        if (event.finish != engine::FinishReason::running) {
            part.finish = event.finish;
            part.cached_tokens = event.resume_point;
            timings->observe_finished(Clock::now() - arrival);
        }
        pump();
    }

    void add_logprobs(Part& part, const actors::StreamEvent& event) const {
        // The token's own bytes: a piece of a character stays as it is here
        // (chat's "bytes" carry it whole; the JSON text shows U+FFFD).
        auto text_of = [&](model::TokenId id) -> std::string {
            try {
                return tokenizer->token_to_piece(static_cast<tokenizer::TokenId>(id));
            } catch (const tokenizer::TokenizerError&) {
                return {};  // an id past the tokenizer's vocabulary (a padded embedding row)
            }
        };
        for (size_t k = 0; k < event.tokens.size() && k < event.logprobs.size(); ++k) {
            if (std::find(end_tokens.begin(), end_tokens.end(), event.tokens[k]) != end_tokens.end()) continue;
            const engine::TokenLogprob& source = event.logprobs[k];
            LogprobEntry entry{text_of(event.tokens[k]), source.logprob, {}};
            for (const auto& [id, logprob] : source.top) entry.top.emplace_back(text_of(id), logprob);
            part.logprobs.push_back(std::move(entry));
        }
    }

    // Sends what is pending; answers when every choice has finished. Called
    // with `mutex` held.
    void pump() {
        if (!started || answered || aborted) return;
        bool all_finished = true;
        bool any_cancelled = false;
        for (const Part& p : parts) {
            all_finished = all_finished && p.finish != engine::FinishReason::running;
            any_cancelled = any_cancelled || p.finish == engine::FinishReason::cancelled;
        }
        if (any_cancelled && all_finished) {
            answered = true;
            // The client went away (nothing to send), or the server is stopping.
            if (gone || responder->disconnected()) return;
            ApiError error(503, "the server stopped this request before it finished (shutting down)");
            if (stream && writer) responder->send_event(writer->error_event(error));
            if (stream) return responder->end_events();
            error.headers.emplace_back("Retry-After", "1");
            return responder->respond(503, generation_detail::kJson, writer ? writer->error_body(error) : error.body(), error.headers);
        }
        if (writer) return pump_writer(all_finished);
        if (stream) send_chunks();
        if (!all_finished) return;
        answered = true;
        Usage usage;
        std::vector<Choice> choices;
        for (size_t i = 0; i < parts.size(); ++i) {
            usage.prompt_tokens += parts[i].prompt_tokens;
            usage.cached_tokens += parts[i].cached_tokens;
            usage.completion_tokens += parts[i].completion_tokens;
            Choice choice{static_cast<int32_t>(i), parts[i].prefix + parts[i].text, generation_detail::finish_reason(parts[i].finish)};
            if (!stream && chat && reasoning.present()) split_reasoning(choice);
            if (!stream && tool_format != ToolCallFormat::none) {
                ParsedReply reply = parse_tool_calls(choice.text, tool_format);
                choice.text = std::move(reply.content);
                choice.tool_calls = std::move(reply.tool_calls);
                choice.finish_reason = generation_detail::finish_reason(parts[i].finish, !choice.tool_calls.empty());
            }
            choices.push_back(std::move(choice));
            if (token_ids) {
                choices.back().token_ids = std::move(parts[i].ids);
                choices.back().prompt_token_ids = std::move(parts[i].prompt_ids);
            }
            if (logprobs) {
                choices.back().logprobs = std::move(parts[i].logprobs);
                choices.back().text_offset = static_cast<int64_t>(parts[i].prefix.size());
            }
        }
        if (stream) {
            if (include_usage) responder->send_event(sse_event(usage_chunk(header, chat, usage)));
            responder->send_event(kSseDone);
            return responder->end_events();
        }
        responder->respond(200, generation_detail::kJson, chat ? chat_body(header, choices, usage) : completion_body(header, choices, usage));
    }

    // A whole chat reply's thoughts, out of its text (the same split a
    // stream makes piece by piece).
    void split_reasoning(Choice& choice) const {
        ReasoningStream splitter(reasoning, starts_in_reasoning);
        std::vector<ReplyPiece> pieces = splitter.feed(choice.text);
        for (ReplyPiece& piece : splitter.finish()) pieces.push_back(std::move(piece));
        choice.text.clear();
        for (const ReplyPiece& piece : pieces) (piece.reasoning ? choice.reasoning : choice.text) += piece.text;
    }

    // Streaming chat: the thoughts in the part's pending text go out as
    // reasoning chunks; the answer stays pending for the content and tool
    // calls. A stream gives all its thoughts before any answer, so the
    // order holds.
    void send_reasoning_chunks(Part& p, int32_t index) {
        std::vector<ReplyPiece> pieces = p.reasoning_stream->feed(p.text);
        if (p.finish != engine::FinishReason::running && !p.finish_sent) {
            for (ReplyPiece& piece : p.reasoning_stream->finish()) pieces.push_back(std::move(piece));
        }
        p.text.clear();
        for (ReplyPiece& piece : pieces) {
            if (!piece.reasoning) {
                p.text += piece.text;
                continue;
            }
            Choice choice = chunk_choice(index, "", std::nullopt);
            choice.reasoning = std::move(piece.text);
            responder->send_event(sse_event(chat_chunk(header, choice, false, include_usage)));
        }
    }

    // The one choice of a route with a writer: its text goes through the
    // writer as it lands, and its events out when streaming.
    void pump_writer(bool finished) {
        Part& p = parts[0];
        if (!p.opened) {
            p.opened = true;
            send_all(writer->open());
        }
        p.sent_text += p.text;
        send_all(writer->feed(p.text));
        p.text.clear();
        if (!finished) return;
        answered = true;
        ReplyOutcome outcome{p.finish, std::nullopt, p.prompt_tokens, p.cached_tokens, p.completion_tokens, std::nullopt};
        if (token_ids) outcome.token_ids = p.ids;
        if (p.finish == engine::FinishReason::stop_string) {
            const std::vector<tokenizer::TokenId> ids(p.ids.begin(), p.ids.end());
            outcome.stop_sequence = matched_stop_sequence(tokenizer->decode(ids), p.sent_text, stop_strings);
        }
        send_all(writer->finish(outcome));
        if (stream) return responder->end_events();
        responder->respond(200, generation_detail::kJson, writer->body());
    }

    void send_all(std::vector<std::string> events) {
        if (!stream) return;
        for (std::string& e : events) responder->send_event(std::move(e));
    }

    // A streamed choice; with return_token_ids it carries the ids pending
    // for it (none on the opening and finishing chunks).
    Choice chunk_choice(int32_t index, std::string text, std::optional<std::string> finish,
                        std::vector<int32_t> ids = {}) const {
        Choice choice{index, std::move(text), std::move(finish)};
        if (token_ids) choice.token_ids = std::move(ids);
        return choice;
    }

    // The part's pending logprobs go into `choice` (a chunk with content).
    void take_logprobs(Part& p, Choice& choice) const {
        if (!logprobs) return;
        choice.text_offset = p.logprob_offset;
        for (const LogprobEntry& e : p.logprobs) p.logprob_offset += static_cast<int64_t>(e.token.size());
        choice.logprobs = std::move(p.logprobs);
        p.logprobs.clear();
    }

    void send_chunks() {
        for (size_t i = 0; i < parts.size(); ++i) {
            Part& p = parts[i];
            const auto index = static_cast<int32_t>(i);
            if (!p.opened) {
                p.opened = true;
                // The first chat chunk carries the role (and is sent even empty).
                if (chat) {
                    responder->send_event(sse_event(chat_chunk(header, chunk_choice(index, "", std::nullopt), true, include_usage)));
                } else if (!p.prefix.empty()) {
                    responder->send_event(
                        sse_event(completion_chunk(header, chunk_choice(index, p.prefix, std::nullopt), include_usage)));
                }
                p.logprob_offset = static_cast<int64_t>(p.prefix.size());
            }
            if (p.reasoning_stream) send_reasoning_chunks(p, index);
            if (p.tool_stream) {
                send_tool_stream_chunks(p, index);
                continue;
            }
            // Ids whose text the detokenizer still holds back (a character
            // cut in the middle) go out at once when they were asked for.
            if (!p.text.empty() || !p.ids.empty() || !p.logprobs.empty()) {
                Choice choice = chunk_choice(index, std::move(p.text), std::nullopt, std::move(p.ids));
                take_logprobs(p, choice);
                p.text.clear();
                p.ids.clear();
                responder->send_event(sse_event(chat ? chat_chunk(header, choice, false, include_usage)
                                                     : completion_chunk(header, choice, include_usage)));
            }
            if (p.finish != engine::FinishReason::running && !p.finish_sent) {
                p.finish_sent = true;
                const Choice choice = chunk_choice(index, "", generation_detail::finish_reason(p.finish));
                responder->send_event(sse_event(chat ? chat_chunk(header, choice, false, include_usage)
                                                     : completion_chunk(header, choice, include_usage)));
            }
        }
    }

    // A chat choice whose text goes through its ToolCallStream: content
    // and tool-call pieces in the order the reply has them; text the stream
    // holds back (maybe the start of a call) waits, its ids do not.
    void send_tool_stream_chunks(Part& p, int32_t index) {
        std::vector<ReplyDelta> deltas = p.tool_stream->feed(p.text);
        p.text.clear();
        const bool finishing = p.finish != engine::FinishReason::running && !p.finish_sent;
        if (finishing) {
            for (ReplyDelta& d : p.tool_stream->finish()) deltas.push_back(std::move(d));
        }
        for (const ReplyDelta& d : deltas) {
            if (d.is_tool_call) {
                responder->send_event(sse_event(chat_tool_call_chunk(header, index, d, include_usage)));
                continue;
            }
            Choice choice = chunk_choice(index, d.content, std::nullopt, std::move(p.ids));
            if (!p.logprobs.empty()) take_logprobs(p, choice);
            p.ids.clear();
            responder->send_event(sse_event(chat_chunk(header, choice, false, include_usage)));
        }
        if (!p.ids.empty() || !p.logprobs.empty()) {
            Choice choice = chunk_choice(index, "", std::nullopt, std::move(p.ids));
            take_logprobs(p, choice);
            p.ids.clear();
            responder->send_event(sse_event(chat_chunk(header, choice, false, include_usage)));
        }
        if (finishing) {
            p.finish_sent = true;
            const Choice choice = chunk_choice(index, "", generation_detail::finish_reason(p.finish, p.tool_stream->calls() > 0));
            responder->send_event(sse_event(chat_chunk(header, choice, false, include_usage)));
        }
    }
};

}  // namespace tf::http
