// Reading tokenizer.json and tokenizer_config.json into a Tokenizer::Impl.
// Every field is checked for its type; a malformed or unsupported file is a
// TokenizerError naming the file, the field and the value.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

#include "tokenizer/byte_level.h"
#include "tokenizer/identity.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace tf::tokenizer {

namespace {

using json = nlohmann::json;

constexpr int64_t kMaxTokenId = (int64_t{1} << 24) - 1;  // 16.7M ids: far above any real vocabulary

struct Reader {
    std::string file;

    [[noreturn]] void fail(const std::string& field, const std::string& what) const {
        throw TokenizerError(file + ": " + field + " " + what);
    }
    const json& object(const json& parent, const char* key, const std::string& field) const {
        if (!parent.contains(key)) fail(field, "is missing");
        const json& v = parent[key];
        if (!v.is_object()) fail(field, "must be an object, got " + std::string(v.type_name()));
        return v;
    }
    std::string string(const json& v, const std::string& field) const {
        if (!v.is_string()) fail(field, "must be a string, got " + std::string(v.type_name()));
        return v.get<std::string>();
    }
    std::string string_at(const json& parent, const char* key, const std::string& field) const {
        if (!parent.contains(key)) fail(field, "is missing");
        return string(parent[key], field);
    }
    bool flag(const json& parent, const char* key, bool fallback, const std::string& field) const {
        if (!parent.contains(key) || parent[key].is_null()) return fallback;
        if (!parent[key].is_boolean()) fail(field, "must be true or false, got " + parent[key].dump());
        return parent[key].get<bool>();
    }
    TokenId id(const json& v, const std::string& field) const {
        if (!v.is_number_integer()) fail(field, "must be an integer id, got " + v.dump());
        const int64_t value = v.is_number_unsigned() ? static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), kMaxTokenId + 1))
                                                     : v.get<int64_t>();
        if (value < 0 || value > kMaxTokenId) {
            fail(field, "id " + v.dump() + " is outside 0.." + std::to_string(kMaxTokenId));
        }
        return static_cast<TokenId>(value);
    }
    std::string type_of(const json& v, const std::string& field) const {
        if (!v.is_object()) fail(field, "must be an object, got " + std::string(v.type_name()));
        return string_at(v, "type", field + ".type");
    }
    // A "pattern": {"String": s} or {"Regex": r}.
    std::pair<std::string, bool> pattern(const json& parent, const std::string& field) const {
        const json& p = object(parent, "pattern", field + ".pattern");
        if (p.contains("String")) return {string(p["String"], field + ".pattern.String"), false};
        if (p.contains("Regex")) return {string(p["Regex"], field + ".pattern.Regex"), true};
        fail(field + ".pattern", "must hold \"String\" or \"Regex\"");
    }
};

json parse(std::string_view text, const std::string& file) {
    try {
        return json::parse(text.begin(), text.end());
    } catch (const json::exception& e) {
        throw TokenizerError(file + ": not valid JSON: " + e.what());
    }
}

void add_normalizer(const Reader& r, const json& node, const std::string& field, std::vector<NormalizeStep>& steps) {
    const std::string type = r.type_of(node, field);
    NormalizeStep step;
    if (type == "Sequence") {
        if (!node.contains("normalizers") || !node["normalizers"].is_array()) r.fail(field + ".normalizers", "must be an array");
        for (size_t i = 0; i < node["normalizers"].size(); ++i) {
            add_normalizer(r, node["normalizers"][i], field + ".normalizers[" + std::to_string(i) + "]", steps);
        }
        return;
    } else if (type == "NFC") {
        step.kind = NormalizeStep::Kind::nfc;
    } else if (type == "NFD") {
        step.kind = NormalizeStep::Kind::nfd;
    } else if (type == "NFKC") {
        step.kind = NormalizeStep::Kind::nfkc;
    } else if (type == "NFKD") {
        step.kind = NormalizeStep::Kind::nfkd;
    } else if (type == "Lowercase") {
        step.kind = NormalizeStep::Kind::lowercase;
    } else if (type == "Prepend") {
        step.kind = NormalizeStep::Kind::prepend;
        step.text = r.string_at(node, "prepend", field + ".prepend");
    } else if (type == "Replace") {
        auto [pattern, is_regex] = r.pattern(node, field);
        if (is_regex) r.fail(field + ".pattern", "Regex '" + pattern + "' is not supported in a Replace normalizer (supported: String)");
        step.kind = NormalizeStep::Kind::replace;
        step.text = pattern;
        step.replacement = r.string_at(node, "content", field + ".content");
    } else if (type == "Strip") {
        step.kind = NormalizeStep::Kind::strip;
        step.strip_left = r.flag(node, "strip_left", true, field + ".strip_left");
        step.strip_right = r.flag(node, "strip_right", true, field + ".strip_right");
    } else {
        r.fail(field + ".type", "'" + type + "' is not supported (supported: NFC, NFD, NFKC, NFKD, Lowercase, Prepend, "
                                "Replace, Strip, Sequence)");
    }
    steps.push_back(std::move(step));
}

SplitBehavior behavior_of(const Reader& r, const json& node, const std::string& field) {
    const std::string b = node.contains("behavior") ? r.string(node["behavior"], field + ".behavior") : "Isolated";
    if (b == "Isolated") return SplitBehavior::isolated;
    if (b == "Removed") return SplitBehavior::removed;
    if (b == "MergedWithPrevious") return SplitBehavior::merged_with_previous;
    if (b == "MergedWithNext") return SplitBehavior::merged_with_next;
    if (b == "Contiguous") return SplitBehavior::contiguous;
    r.fail(field + ".behavior", "'" + b + "' is not a known split behavior");
}

void add_pre_tokenizer(const Reader& r, const json& node, const std::string& field, std::vector<PreTokenizeStep>& steps,
                       bool& byte_level) {
    const std::string type = r.type_of(node, field);
    PreTokenizeStep step;
    if (type == "Sequence") {
        if (!node.contains("pretokenizers") || !node["pretokenizers"].is_array()) r.fail(field + ".pretokenizers", "must be an array");
        for (size_t i = 0; i < node["pretokenizers"].size(); ++i) {
            add_pre_tokenizer(r, node["pretokenizers"][i], field + ".pretokenizers[" + std::to_string(i) + "]", steps,
                              byte_level);
        }
        return;
    } else if (type == "Split") {
        step.kind = PreTokenizeStep::Kind::split;
        auto [pattern, is_regex] = r.pattern(node, field);
        if (is_regex) {
            step.regex = std::make_shared<Regex>(pattern, r.file + ": " + field + ".pattern.Regex");
        } else {
            step.literal = pattern;
        }
        step.behavior = behavior_of(r, node, field);
        step.invert = r.flag(node, "invert", false, field + ".invert");
    } else if (type == "ByteLevel") {
        step.kind = PreTokenizeStep::Kind::byte_level;
        step.add_prefix_space = r.flag(node, "add_prefix_space", true, field + ".add_prefix_space");
        step.use_regex = r.flag(node, "use_regex", true, field + ".use_regex");
        byte_level = true;
    } else if (type == "Metaspace") {
        step.kind = PreTokenizeStep::Kind::metaspace;
        step.replacement = node.contains("replacement") ? r.string(node["replacement"], field + ".replacement") : "\xE2\x96\x81";
        if (step.replacement.empty()) r.fail(field + ".replacement", "must not be empty");
        std::string scheme = "always";
        if (node.contains("prepend_scheme")) {
            scheme = r.string(node["prepend_scheme"], field + ".prepend_scheme");
        } else if (!r.flag(node, "add_prefix_space", true, field + ".add_prefix_space")) {
            scheme = "never";
        }
        if (scheme == "always") {
            step.prepend_scheme = PrependScheme::always;
        } else if (scheme == "first") {
            step.prepend_scheme = PrependScheme::first;
        } else if (scheme == "never") {
            step.prepend_scheme = PrependScheme::never;
        } else {
            r.fail(field + ".prepend_scheme", "'" + scheme + "' is not one of always, first, never");
        }
        step.split = r.flag(node, "split", true, field + ".split");
    } else {
        r.fail(field + ".type", "'" + type + "' is not supported (supported: Split, ByteLevel, Metaspace, Sequence)");
    }
    steps.push_back(std::move(step));
}

// What the decoder chain does, reduced to per-token rewriting plus a strip at
// the start of the text.
struct DecoderPlan {
    bool byte_level = false;
    bool byte_fallback = false;
    std::vector<std::pair<std::string, std::string>> replacements;
    size_t strip_leading_spaces = 0;
};

void add_decoder(const Reader& r, const json& node, const std::string& field, DecoderPlan& plan) {
    const std::string type = r.type_of(node, field);
    if (type == "Sequence") {
        if (!node.contains("decoders") || !node["decoders"].is_array()) r.fail(field + ".decoders", "must be an array");
        for (size_t i = 0; i < node["decoders"].size(); ++i) {
            add_decoder(r, node["decoders"][i], field + ".decoders[" + std::to_string(i) + "]", plan);
        }
    } else if (type == "ByteLevel") {
        plan.byte_level = true;
    } else if (type == "ByteFallback") {
        plan.byte_fallback = true;
    } else if (type == "Fuse") {
        // Joining is what decoding does anyway.
    } else if (type == "Replace") {
        auto [pattern, is_regex] = r.pattern(node, field);
        if (is_regex || pattern.empty()) r.fail(field + ".pattern", "must be a non-empty String pattern");
        plan.replacements.emplace_back(pattern, r.string_at(node, "content", field + ".content"));
    } else if (type == "Strip") {
        const std::string content = r.string_at(node, "content", field + ".content");
        const json start = node.value("start", json(0)), stop = node.value("stop", json(0));
        if (content != " " || !start.is_number_unsigned() || !stop.is_number_unsigned() || stop.get<uint64_t>() != 0 ||
            start.get<uint64_t>() > 16) {
            r.fail(field, "Strip is supported only with content \" \", stop 0 and a small start; got " + node.dump());
        }
        plan.strip_leading_spaces += start.get<size_t>();
    } else if (type == "Metaspace") {
        const std::string rep = node.contains("replacement") ? r.string(node["replacement"], field + ".replacement") : "\xE2\x96\x81";
        if (rep.empty()) r.fail(field + ".replacement", "must not be empty");
        plan.replacements.emplace_back(rep, " ");
        std::string scheme = node.contains("prepend_scheme") ? r.string(node["prepend_scheme"], field + ".prepend_scheme")
                             : r.flag(node, "add_prefix_space", true, field + ".add_prefix_space") ? "always" : "never";
        if (scheme != "never") plan.strip_leading_spaces += 1;
    } else {
        r.fail(field + ".type", "'" + type + "' is not supported (supported: ByteLevel, ByteFallback, Fuse, Replace, "
                                "Strip, Metaspace, Sequence)");
    }
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    size_t at = 0;
    while ((at = text.find(from, at)) != std::string::npos) {
        text.replace(at, from.size(), to);
        at += to.size();
    }
    return text;
}

void add_post_processor(const Reader& r, const json& node, const std::string& field,
                        const std::unordered_map<std::string, TokenId>& added_by_content, std::vector<PostItem>& items) {
    const std::string type = r.type_of(node, field);
    if (type == "ByteLevel") return;  // offsets only
    if (type == "Sequence") {
        if (!node.contains("processors") || !node["processors"].is_array()) r.fail(field + ".processors", "must be an array");
        for (size_t i = 0; i < node["processors"].size(); ++i) {
            add_post_processor(r, node["processors"][i], field + ".processors[" + std::to_string(i) + "]",
                               added_by_content, items);
        }
        return;
    }
    if (type != "TemplateProcessing") {
        r.fail(field + ".type", "'" + type + "' is not supported (supported: ByteLevel, TemplateProcessing, Sequence)");
    }
    if (!items.empty()) r.fail(field, "more than one TemplateProcessing is not supported");
    if (!node.contains("single") || !node["single"].is_array()) r.fail(field + ".single", "must be an array");
    const json special = node.value("special_tokens", json::object());
    for (size_t i = 0; i < node["single"].size(); ++i) {
        const json& piece = node["single"][i];
        const std::string where = field + ".single[" + std::to_string(i) + "]";
        if (piece.is_object() && piece.contains("Sequence")) {
            items.push_back({true, {}});
        } else if (piece.is_object() && piece.contains("SpecialToken") && piece["SpecialToken"].is_object()) {
            const std::string name = r.string_at(piece["SpecialToken"], "id", where + ".SpecialToken.id");
            PostItem item;
            if (special.is_object() && special.contains(name) && special[name].is_object() && special[name].contains("ids") &&
                special[name]["ids"].is_array()) {
                for (const json& v : special[name]["ids"]) item.ids.push_back(r.id(v, field + ".special_tokens." + name));
            } else if (auto it = added_by_content.find(name); it != added_by_content.end()) {
                item.ids.push_back(it->second);
            } else {
                r.fail(where, "names special token '" + name + "', which has no ids");
            }
            items.push_back(std::move(item));
        } else {
            r.fail(where, "must be {\"Sequence\": ...} or {\"SpecialToken\": ...}");
        }
    }
}

std::optional<std::string> config_token(const Reader& r, const json& config, const char* key) {
    if (!config.contains(key) || config[key].is_null()) return std::nullopt;
    const json& v = config[key];
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
    r.fail(key, "must be a string or an object with \"content\", got " + v.dump());
}

}  // namespace

std::shared_ptr<const Tokenizer::Impl> load_impl(std::string_view tokenizer_json, std::string_view config_json,
                                                 const std::string& source, const std::string& config_source,
                                                 std::string_view chat_template_jinja, bool legacy_identity) {
    auto impl = std::make_shared<Tokenizer::Impl>();
    impl->source = source;
    const Reader r{source};
    const json root = parse(tokenizer_json, source);
    if (!root.is_object()) r.fail("the top level", "must be an object, got " + std::string(root.type_name()));

    // model
    const json& model = r.object(root, "model", "model");
    const std::string model_type = model.contains("type") ? r.string(model["type"], "model.type") : "BPE";
    if (model_type != "BPE") r.fail("model.type", "'" + model_type + "' is not supported (supported: BPE)");
    if (model.contains("dropout") && !model["dropout"].is_null() &&
        !(model["dropout"].is_number() && model["dropout"].get<double>() == 0.0)) {
        r.fail("model.dropout", model["dropout"].dump() + " is not supported (BPE dropout is for training)");
    }
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
        if (model.contains(key) && !model[key].is_null() && !(model[key].is_string() && model[key].get<std::string>().empty())) {
            r.fail(std::string("model.") + key, model[key].dump() + " is not supported (only null or \"\")");
        }
    }

    // pre-tokenizer first: whether it is byte-level decides the model form of tokens
    std::vector<PreTokenizeStep> pre_steps;
    if (root.contains("pre_tokenizer") && !root["pre_tokenizer"].is_null()) {
        add_pre_tokenizer(r, root["pre_tokenizer"], "pre_tokenizer", pre_steps, impl->byte_level);
    }
    impl->pre_tokenizer = PreTokenizer(std::move(pre_steps));
    std::vector<NormalizeStep> norm_steps;
    if (root.contains("normalizer") && !root["normalizer"].is_null()) {
        add_normalizer(r, root["normalizer"], "normalizer", norm_steps);
    }
    impl->normalizer = Normalizer(std::move(norm_steps));

    const auto model_form = [&](const std::string& spelling) -> std::string {
        if (!impl->byte_level) return spelling;
        auto bytes = byte_level::to_bytes(spelling);
        return bytes ? *bytes : spelling;  // not in the alphabet: kept as spelled (decodable, never produced)
    };

    BpeConfig bpe;
    bpe.where = source + ": model";
    bpe.byte_level = impl->byte_level;
    std::vector<std::pair<std::string, uint32_t>> vocab_spelled;
    const json& vocab = r.object(model, "vocab", "model.vocab");
    int64_t max_id = -1;
    vocab_spelled.reserve(vocab.size());
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
        const TokenId id = r.id(it.value(), "model.vocab[\"" + it.key() + "\"]");
        if (utf8::first_invalid(it.key()) != std::string::npos) r.fail("model.vocab", "holds a token that is not UTF-8");
        vocab_spelled.emplace_back(it.key(), id);
        max_id = std::max<int64_t>(max_id, id);
    }
    std::vector<std::pair<std::string, std::string>> merges_spelled;
    if (model.contains("merges") && !model["merges"].is_null()) {
        const json& merges = model["merges"];
        if (!merges.is_array()) r.fail("model.merges", "must be an array, got " + std::string(merges.type_name()));
        merges_spelled.reserve(merges.size());
        for (size_t i = 0; i < merges.size(); ++i) {
            const json& m = merges[i];
            const std::string field = "model.merges[" + std::to_string(i) + "]";
            if (m.is_string()) {
                const std::string s = m.get<std::string>();
                const size_t space = s.find(' ');
                if (space == std::string::npos || space == 0 || space + 1 >= s.size() || s.find(' ', space + 1) != std::string::npos) {
                    r.fail(field, "'" + s + "' is not two tokens separated by one space");
                }
                merges_spelled.emplace_back(s.substr(0, space), s.substr(space + 1));
            } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
                merges_spelled.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
            } else {
                r.fail(field, "must be \"a b\" or [\"a\", \"b\"], got " + m.dump());
            }
        }
    }

    // added tokens
    if (root.contains("added_tokens") && !root["added_tokens"].is_null()) {
        const json& added = root["added_tokens"];
        if (!added.is_array()) r.fail("added_tokens", "must be an array");
        for (size_t i = 0; i < added.size(); ++i) {
            const std::string field = "added_tokens[" + std::to_string(i) + "]";
            const json& a = added[i];
            if (!a.is_object()) r.fail(field, "must be an object");
            AddedToken t;
            if (!a.contains("id")) r.fail(field + ".id", "is missing");
            t.id = r.id(a["id"], field + ".id");
            t.content = r.string_at(a, "content", field + ".content");
            if (t.content.empty()) r.fail(field + ".content", "must not be empty");
            if (utf8::first_invalid(t.content) != std::string::npos) r.fail(field + ".content", "is not UTF-8");
            t.special = r.flag(a, "special", false, field + ".special");
            t.lstrip = r.flag(a, "lstrip", false, field + ".lstrip");
            t.rstrip = r.flag(a, "rstrip", false, field + ".rstrip");
            t.normalized = r.flag(a, "normalized", !t.special, field + ".normalized");
            t.single_word = r.flag(a, "single_word", false, field + ".single_word");
            max_id = std::max<int64_t>(max_id, t.id);
            impl->added_by_content.emplace(t.content, t.id);
            impl->added.push_back(std::move(t));
        }
    }
    if (max_id < 0) r.fail("model.vocab", "is empty");
    impl->vocab_size = static_cast<uint32_t>(max_id + 1);

    // the BPE model over model-form tokens
    bpe.vocab.reserve(vocab_spelled.size());
    for (const auto& [spelling, id] : vocab_spelled) bpe.vocab.emplace_back(model_form(spelling), id);
    bpe.merges.reserve(merges_spelled.size());
    for (const auto& [a, b] : merges_spelled) bpe.merges.emplace_back(model_form(a), model_form(b));
    bpe.byte_fallback = r.flag(model, "byte_fallback", false, "model.byte_fallback");
    bpe.fuse_unk = r.flag(model, "fuse_unk", false, "model.fuse_unk");
    bpe.ignore_merges = r.flag(model, "ignore_merges", false, "model.ignore_merges");
    if (model.contains("unk_token") && !model["unk_token"].is_null()) {
        const std::string unk = r.string(model["unk_token"], "model.unk_token");
        auto it = std::find_if(vocab_spelled.begin(), vocab_spelled.end(), [&](const auto& v) { return v.first == unk; });
        if (it == vocab_spelled.end()) r.fail("model.unk_token", "'" + unk + "' is not in the vocabulary");
        bpe.unk = it->second;
    }
    impl->model = BpeModel(bpe);
    impl->raw_matcher = AddedTokenMatcher(impl->added, false);
    impl->normalized_matcher = AddedTokenMatcher(impl->added, true);

    // decoding
    DecoderPlan plan;
    if (root.contains("decoder") && !root["decoder"].is_null()) add_decoder(r, root["decoder"], "decoder", plan);
    impl->strip_leading_spaces = plan.strip_leading_spaces;
    impl->pieces.assign(impl->vocab_size, std::string());
    impl->kinds.assign(impl->vocab_size, TokenKind::none);
    for (const auto& [spelling, id] : vocab_spelled) {
        std::string piece;
        unsigned int byte = 0;
        char tail = 0;
        if (plan.byte_level) {
            auto bytes = byte_level::to_bytes(spelling);
            piece = bytes ? *bytes : spelling;  // HF: a token outside the alphabet decodes to its own bytes
        } else if (plan.byte_fallback && spelling.size() == 6 &&
                   std::sscanf(spelling.c_str(), "<0x%2X%c", &byte, &tail) == 2 && tail == '>') {
            piece = std::string(1, static_cast<char>(byte));
        } else {
            piece = spelling;
            for (const auto& [from, to] : plan.replacements) piece = replace_all(piece, from, to);
        }
        impl->pieces[id] = std::move(piece);
        impl->kinds[id] = TokenKind::vocab;
    }
    for (const AddedToken& t : impl->added) {
        impl->pieces[t.id] = t.content;
        impl->kinds[t.id] = t.special ? TokenKind::special : TokenKind::added;
    }

    if (root.contains("post_processor") && !root["post_processor"].is_null()) {
        add_post_processor(r, root["post_processor"], "post_processor", impl->added_by_content, impl->post_single);
    }

    {
        std::vector<std::pair<std::string, uint32_t>> tokens = vocab_spelled;
        std::vector<uint32_t> added_ids;
        for (const AddedToken& t : impl->added) {
            tokens.emplace_back(t.content, t.id);
            added_ids.push_back(t.id);
        }
        impl->identity = compute_identity_v2(std::move(tokens), merges_spelled, std::move(added_ids), impl->vocab_size);
        if (legacy_identity) impl->legacy_identity = compute_identity(vocab_spelled, merges_spelled, impl->added, impl->vocab_size);
    }

    // tokenizer_config.json
    std::string template_source(chat_template_jinja), tool_use_source;
    if (!config_json.empty()) {
        const Reader c{config_source};
        const json config = parse(config_json, config_source);
        if (!config.is_object()) c.fail("the top level", "must be an object");
        impl->clean_up_spaces = c.flag(config, "clean_up_tokenization_spaces", false, "clean_up_tokenization_spaces");
        const std::pair<const char*, std::optional<TokenId>*> named[] = {{"bos_token", &impl->special_ids.bos},
                                                                         {"eos_token", &impl->special_ids.eos},
                                                                         {"pad_token", &impl->special_ids.pad},
                                                                         {"unk_token", &impl->special_ids.unk}};
        for (const auto& [key, slot] : named) {
            auto text = config_token(c, config, key);
            if (!text) continue;
            impl->template_tokens.emplace_back(key, *text);
            if (auto it = impl->added_by_content.find(*text); it != impl->added_by_content.end()) {
                *slot = it->second;
            } else if (auto id = impl->model.token_id(model_form(*text))) {
                *slot = *id;
            }
        }
        if (template_source.empty() && config.contains("chat_template") && !config["chat_template"].is_null()) {
            const json& t = config["chat_template"];
            if (t.is_string()) {
                template_source = t.get<std::string>();
            } else if (t.is_array()) {
                for (size_t i = 0; i < t.size(); ++i) {
                    const std::string field = "chat_template[" + std::to_string(i) + "]";
                    if (!t[i].is_object()) c.fail(field, "must be an object with name and template");
                    const std::string name = c.string_at(t[i], "name", field + ".name");
                    const std::string body = c.string_at(t[i], "template", field + ".template");
                    if (name == "default") template_source = body;
                    if (name == "tool_use") tool_use_source = body;
                }
            } else {
                c.fail("chat_template", "must be a string or a list of {name, template}");
            }
        }
    }
    try {
        if (!template_source.empty()) impl->chat_template = std::make_shared<chat::Template>(template_source);
        if (!tool_use_source.empty()) impl->tool_use_template = std::make_shared<chat::Template>(tool_use_source);
    } catch (const TokenizerError& e) {
        // Encoding still works; rendering reports this.
        impl->chat_template.reset();
        impl->chat_template_error = config_source + ": chat_template: " + e.what();
    }
    return impl;
}

}  // namespace tf::tokenizer
