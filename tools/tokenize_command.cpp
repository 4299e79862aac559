// `tensorfold tokenize [MODEL]`: UTF-8 text on stdin, its ids on stdout as a
// JSON array. --decode: a JSON array of ids on stdin, the text on stdout.
// --chat: a JSON array of messages ({"role", "content", "tool_calls"?}) on
// stdin, rendered by the model's chat template with add_generation_prompt,
// then encoded. Errors go to stderr with exit code 1.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

#include "tokenizer/tokenizer.h"
#include "tools/commands.h"
#include "tools/model_files.h"

namespace tf::tools {

namespace {

tokenizer::ChatRequest chat_request(const nlohmann::ordered_json& messages) {
    if (!messages.is_array()) throw tokenizer::TokenizerError("--chat: stdin must be a JSON array of messages");
    tokenizer::ChatRequest request;
    for (size_t k = 0; k < messages.size(); ++k) {
        const auto& m = messages[k];
        const std::string where = "messages[" + std::to_string(k) + "]";
        if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
            throw tokenizer::TokenizerError("--chat: " + where + " needs a string \"role\"");
        }
        tokenizer::ChatMessage message;
        message.role = m["role"].get<std::string>();
        if (m.contains("content") && m["content"].is_string()) message.content = m["content"].get<std::string>();
        if (m.contains("reasoning_content") && m["reasoning_content"].is_string()) {
            message.reasoning_content = m["reasoning_content"].get<std::string>();
        }
        if (m.contains("tool_calls") && m["tool_calls"].is_array()) {
            for (const auto& call : m["tool_calls"]) {
                const auto& f = call.contains("function") ? call["function"] : call;
                tokenizer::ToolCall tool_call;
                tool_call.name = f.value("name", "");
                tool_call.arguments_json = f.contains("arguments") ? f["arguments"].dump() : "{}";
                tool_call.id = call.value("id", "");
                message.tool_calls.push_back(std::move(tool_call));
            }
        }
        request.messages.push_back(std::move(message));
    }
    request.add_generation_prompt = true;
    return request;
}

}  // namespace

int tokenize_command(const config::TokenizeOptions& options) {
    try {
        const tokenizer::Tokenizer tok = load_model_tokenizer(options.model_dir);
        const std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
        if (options.decode) {
            const auto ids = nlohmann::json::parse(input);
            if (!ids.is_array()) throw tokenizer::TokenizerError("--decode: stdin must be a JSON array of ids");
            std::vector<tokenizer::TokenId> list;
            for (const auto& id : ids) {
                if (!id.is_number_unsigned()) throw tokenizer::TokenizerError("--decode: " + id.dump() + " is not a token id");
                list.push_back(id.get<tokenizer::TokenId>());
            }
            std::cout << tok.decode(list);
            return 0;
        }
        const std::string text = options.chat ? tok.render_chat(chat_request(nlohmann::ordered_json::parse(input))) : input;
        std::cout << nlohmann::json(tok.encode(text)).dump() << "\n";
        return 0;
    } catch (const tokenizer::TokenizerError& e) {
        std::fprintf(stderr, "tensorfold tokenize: %s\n", e.what());
    } catch (const nlohmann::json::exception& e) {
        std::fprintf(stderr, "tensorfold tokenize: stdin is not valid JSON: %s\n", e.what());
    } catch (const std::exception& e) {  // model::LoadError: a GGUF file that cannot be read
        std::fprintf(stderr, "tensorfold tokenize: %s\n", e.what());
    }
    return 1;
}

}  // namespace tf::tools
