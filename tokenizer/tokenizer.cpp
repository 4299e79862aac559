#include "tokenizer/tokenizer.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace tf::tokenizer {

namespace {

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw TokenizerError(path.string() + ": cannot be read");
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) throw TokenizerError(path.string() + ": read failed");
    return text.str();
}

// The loader checks every field it reads; this turns any JSON access it
// missed into the same kind of error rather than letting it escape.
std::shared_ptr<const Tokenizer::Impl> guarded_load(std::string_view tokenizer_json, std::string_view config_json,
                                                    const std::string& source, const std::string& config_source,
                                                    std::string_view jinja) {
    try {
        return load_impl(tokenizer_json, config_json, source, config_source, jinja);
    } catch (const nlohmann::json::exception& e) {
        throw TokenizerError(source + ": malformed: " + e.what());
    }
}

}  // namespace

std::string clean_up_tokenization(std::string text) {
    // The replacements of transformers' clean_up_tokenization, in its order.
    static const std::pair<const char*, const char*> rules[] = {
        {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
        {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (const auto& [from, to] : rules) {
        const std::string_view f(from), t(to);
        size_t at = 0;
        while ((at = text.find(f, at)) != std::string::npos) {
            text.replace(at, f.size(), t);
            at += t.size();
        }
    }
    return text;
}

Tokenizer Tokenizer::load(const std::filesystem::path& path) {
    std::error_code ec;
    std::filesystem::path dir, file;
    if (std::filesystem::is_directory(path, ec)) {
        dir = path;
        file = path / "tokenizer.json";
    } else {
        file = path;
        dir = path.parent_path();
    }
    if (!std::filesystem::exists(file, ec)) {
        throw TokenizerError(file.string() + ": not found (a model directory needs a tokenizer.json)");
    }
    const std::string tokenizer_json = read_file(file);
    const std::filesystem::path config_path = dir / "tokenizer_config.json";
    const std::string config_json = std::filesystem::exists(config_path, ec) ? read_file(config_path) : std::string();
    const std::filesystem::path jinja_path = dir / "chat_template.jinja";
    const std::string jinja = std::filesystem::exists(jinja_path, ec) ? read_file(jinja_path) : std::string();
    return Tokenizer(guarded_load(tokenizer_json, config_json, file.string(),
                                  jinja.empty() ? config_path.string() : jinja_path.string(), jinja));
}

Tokenizer Tokenizer::from_json(std::string_view tokenizer_json, std::string_view config_json, const std::string& source,
                               std::string_view chat_template_jinja) {
    return Tokenizer(guarded_load(tokenizer_json, config_json, source, "tokenizer_config.json", chat_template_jinja));
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool allow_special, bool add_special_tokens) const {
    const Impl& m = *impl_;
    if (size_t bad = utf8::first_invalid(text); bad != std::string_view::npos) {
        throw TokenizerError("encode: the text is not valid UTF-8 (byte " + std::to_string(bad) + ")");
    }
    std::vector<TokenId> ids;
    ids.reserve(text.size() / 3 + 4);
    std::vector<Segment> segments, inner;
    Pieces pieces;
    m.raw_matcher.split(text, allow_special, segments);

    const auto encode_plain = [&](std::string_view plain, bool first_section) {
        m.pre_tokenizer.run(plain, first_section, pieces);
        for (size_t i = 0; i < pieces.ranges.size(); ++i) m.model.encode(pieces.piece(i), ids);
    };
    for (const Segment& s : segments) {
        if (s.is_token) {
            ids.push_back(s.token);
            continue;
        }
        const std::string_view plain = text.substr(s.begin, s.end - s.begin);
        if (m.normalizer.empty() && m.normalized_matcher.empty()) {
            encode_plain(plain, s.begin == 0);
            continue;
        }
        const std::string normalized = m.normalizer.empty() ? std::string(plain) : m.normalizer.apply(plain);
        inner.clear();
        m.normalized_matcher.split(normalized, allow_special, inner);
        for (const Segment& n : inner) {
            if (n.is_token) {
                ids.push_back(n.token);
            } else {
                encode_plain(std::string_view(normalized).substr(n.begin, n.end - n.begin), s.begin == 0 && n.begin == 0);
            }
        }
    }
    if (add_special_tokens && !m.post_single.empty()) {
        std::vector<TokenId> framed;
        framed.reserve(ids.size() + 4);
        for (const PostItem& item : m.post_single) {
            if (item.is_sequence) {
                framed.insert(framed.end(), ids.begin(), ids.end());
            } else {
                framed.insert(framed.end(), item.ids.begin(), item.ids.end());
            }
        }
        return framed;
    }
    return ids;
}

std::string Tokenizer::decode(std::span<const TokenId> ids, bool skip_special_tokens) const {
    const Impl& m = *impl_;
    std::string bytes;
    for (TokenId id : ids) {
        const std::string& piece = token_to_piece(id);
        if (skip_special_tokens && m.kinds[id] == TokenKind::special) continue;
        bytes += piece;
    }
    size_t strip = 0;
    while (strip < m.strip_leading_spaces && strip < bytes.size() && bytes[strip] == ' ') ++strip;
    std::string text = utf8::lossy(std::string_view(bytes).substr(strip));
    return m.clean_up_spaces ? clean_up_tokenization(std::move(text)) : text;
}

bool Tokenizer::has_piece(TokenId id) const {
    const Impl& m = *impl_;
    return id < m.kinds.size() && m.kinds[id] != TokenKind::none;
}

const std::string& Tokenizer::token_to_piece(TokenId id) const {
    const Impl& m = *impl_;
    if (id >= m.kinds.size() || m.kinds[id] == TokenKind::none) {
        throw TokenizerError("token id " + std::to_string(id) + " is not in the vocabulary of " + m.source +
                             " (size " + std::to_string(m.vocab_size) + ")");
    }
    return m.pieces[id];
}

std::optional<TokenId> Tokenizer::token_to_id(std::string_view token) const {
    const Impl& m = *impl_;
    if (auto it = m.added_by_content.find(std::string(token)); it != m.added_by_content.end()) return it->second;
    if (m.byte_level) {
        if (auto bytes = byte_level::to_bytes(token)) {
            if (auto id = m.model.token_id(*bytes)) return id;
        }
    }
    return m.model.token_id(token);
}

uint32_t Tokenizer::vocab_size() const { return impl_->vocab_size; }

bool Tokenizer::is_special(TokenId id) const {
    return id < impl_->kinds.size() && impl_->kinds[id] == TokenKind::special;
}

const SpecialTokenIds& Tokenizer::special_ids() const { return impl_->special_ids; }

bool Tokenizer::has_chat_template() const { return impl_->chat_template != nullptr; }

std::string Tokenizer::render_chat(const ChatRequest& request) const {
    const Impl& m = *impl_;
    if (!m.chat_template) {
        if (!m.chat_template_error.empty()) throw TokenizerError(m.chat_template_error);
        throw TokenizerError(m.source + ": this model has no chat template (tokenizer_config.json chat_template or "
                                        "chat_template.jinja)");
    }
    const chat::Template& t = (!request.tools_json.empty() && m.tool_use_template) ? *m.tool_use_template : *m.chat_template;
    return t.render(request, m.template_tokens);
}

namespace {

const chat::Template* tools_template(const Tokenizer::Impl& m) {
    return m.tool_use_template ? m.tool_use_template.get() : m.chat_template.get();
}

}  // namespace

bool Tokenizer::supports_tools() const {
    const chat::Template* t = tools_template(*impl_);
    return t != nullptr && t->reads_variable("tools");
}

const std::string& Tokenizer::tools_template_source() const {
    static const std::string kNone;
    const chat::Template* t = tools_template(*impl_);
    return t ? t->source() : kNone;
}

const TokenizerIdentity& Tokenizer::identity() const { return impl_->identity; }
const std::optional<TokenizerIdentity>& Tokenizer::legacy_identity() const { return impl_->legacy_identity; }

const std::string& Tokenizer::source() const { return impl_->source; }

}  // namespace tf::tokenizer
