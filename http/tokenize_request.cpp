#include "http/tokenize_request.h"

#include "http/json_fields.h"

namespace tf::http {

namespace {

using namespace json_fields;

// Whether `bytes` is whole UTF-8: nlohmann refuses to write a string that is not.
bool valid_utf8(std::string_view bytes) {
    size_t i = 0;
    while (i < bytes.size()) {
        const auto lead = static_cast<unsigned char>(bytes[i]);
        const size_t length = lead < 0x80           ? 1
                              : (lead >> 5) == 0x6  ? 2
                              : (lead >> 4) == 0xE  ? 3
                              : (lead >> 3) == 0x1E ? 4
                                                    : 0;
        if (length == 0 || i + length > bytes.size()) return false;
        for (size_t k = 1; k < length; ++k) {
            if ((static_cast<unsigned char>(bytes[i + k]) >> 6) != 0x2) return false;
        }
        i += length;
    }
    return true;
}

}  // namespace

TokenizeRequest parse_tokenize_request(std::string_view body) {
    const Json root = parse_object(body);
    TokenizeRequest request;
    const Json* content = field(root, "content");
    if (!content) fail("content", "required");
    if (!content->is_string()) wrong_type("content", "a string", *content);
    request.content = content->get<std::string>();
    request.add_special = boolean(root, "add_special").value_or(false);
    request.parse_special = boolean(root, "parse_special").value_or(true);
    request.with_pieces = boolean(root, "with_pieces").value_or(false);
    return request;
}

DetokenizeRequest parse_detokenize_request(std::string_view body) {
    const Json root = parse_object(body);
    const Json* tokens = field(root, "tokens");
    if (!tokens) fail("tokens", "required");
    if (!tokens->is_array()) wrong_type("tokens", "an array of token ids", *tokens);
    DetokenizeRequest request;
    for (size_t i = 0; i < tokens->size(); ++i) {
        const Json& id = (*tokens)[i];
        if (!id.is_number_integer() && !id.is_number_unsigned())
            wrong_type(at("tokens", i), "a token id (an integer)", id);
        request.tokens.push_back(id.get<int64_t>());
    }
    return request;
}

std::string tokenize_body(const std::vector<TokenPiece>& tokens, bool with_pieces) {
    Json list = Json::array();
    for (const TokenPiece& token : tokens) {
        if (!with_pieces) {
            list.push_back(token.id);
            continue;
        }
        Json piece;
        if (valid_utf8(token.piece)) {
            piece = token.piece;
        } else {
            piece = Json::array();
            for (char byte : token.piece) piece.push_back(static_cast<unsigned char>(byte));
        }
        list.push_back(Json{{"id", token.id}, {"piece", std::move(piece)}});
    }
    return Json{{"tokens", std::move(list)}}.dump();
}

// decode() already turns bytes that are not UTF-8 into U+FFFD, so the text dumps.
std::string detokenize_body(const std::string& content) { return Json{{"content", content}}.dump(); }

std::string apply_template_body(const std::string& prompt) { return Json{{"prompt", prompt}}.dump(); }

}  // namespace tf::http
