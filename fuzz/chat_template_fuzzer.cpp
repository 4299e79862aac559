// Chat templates come from a model directory's tokenizer_config.json, so the
// interpreter (tokenizer/chat_template/) parses and runs text that nobody
// here wrote. Every input must render or fail with a TokenizerError.
//
// Input layout: the template source, then a NUL byte, then message contents
// separated by 0x01 bytes, given alternately as user and assistant turns. An
// input without a NUL is a template rendered over one fixed conversation.
#include <cstdint>
#include <string>
#include <string_view>

#include "tokenizer/chat_template/template.h"
#include "tokenizer/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace tf::tokenizer;
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const size_t split = input.find('\0');
    const std::string source(input.substr(0, split));

    ChatRequest request;
    if (split == std::string_view::npos) {
        request.messages = {{.role = "system", .content = "Be brief."}, {.role = "user", .content = "Hi"}};
    } else {
        std::string_view rest = input.substr(split + 1);
        for (int turn = 0; turn < 64; ++turn) {
            const size_t end = rest.find('\x01');
            ChatMessage message;
            message.role = turn % 2 == 0 ? "user" : "assistant";
            message.content = std::string(rest.substr(0, end));
            request.messages.push_back(std::move(message));
            if (end == std::string_view::npos) break;
            rest.remove_prefix(end + 1);
        }
    }
    request.add_generation_prompt = size % 2 == 0;
    try {
        const chat::Template tmpl(source);
        tmpl.render(request, {{"bos_token", "<s>"}, {"eos_token", "</s>"}});
    } catch (const TokenizerError&) {
    }
    return 0;
}
