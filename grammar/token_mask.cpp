#include "grammar/token_mask.h"

#include <algorithm>

namespace tf::grammar {
namespace {

// Whole UTF-8 characters, printable, no '"' or '\\': text that a JSON
// string body takes without leaving the body, room permitting. The byte
// ranges are the ones the grammar's string matcher checks (no overlong forms,
// surrogates or code points above U+10FFFF). Returns the number of code
// points, or -1 when the text is not plain.
int plain_string_length(const std::string& bytes) {
    int length = 0;
    size_t i = 0;
    while (i < bytes.size()) {
        const auto b = static_cast<uint8_t>(bytes[i]);
        ++length;
        if (b < 0x80) {
            if (b < 0x20 || b == '"' || b == '\\') return -1;
            ++i;
            continue;
        }
        size_t continuation = 0;
        uint8_t lo = 0x80, hi = 0xBF;  // range of the first continuation byte
        if (b >= 0xC2 && b <= 0xDF) {
            continuation = 1;
        } else if (b >= 0xE0 && b <= 0xEF) {
            continuation = 2;
            if (b == 0xE0) lo = 0xA0;
            if (b == 0xED) hi = 0x9F;
        } else if (b >= 0xF0 && b <= 0xF4) {
            continuation = 3;
            if (b == 0xF0) lo = 0x90;
            if (b == 0xF4) hi = 0x8F;
        } else {
            return -1;
        }
        if (i + continuation >= bytes.size()) return -1;  // the character is cut off
        for (size_t k = 1; k <= continuation; ++k) {
            const auto c = static_cast<uint8_t>(bytes[i + k]);
            if (c < lo || c > hi) return -1;
            lo = 0x80;
            hi = 0xBF;
        }
        i += continuation + 1;
    }
    return length;
}

void set_bit(std::vector<uint64_t>& bits, int32_t id) { bits[id / 64] |= uint64_t{1} << (id % 64); }

}  // namespace

TokenMasker::TokenMasker(std::vector<std::string> token_bytes, std::vector<int32_t> end_tokens)
    : token_bytes_(std::move(token_bytes)), end_tokens_(std::move(end_tokens)) {
    const auto vocab = static_cast<int32_t>(token_bytes_.size());
    is_end_.assign(token_bytes_.size(), false);
    for (int32_t id : end_tokens_) {
        if (id >= 0 && id < vocab) is_end_[id] = true;
    }
    std::vector<int32_t> texts, not_plain;
    std::vector<int> plain_length(token_bytes_.size(), -1);
    int longest = 0;
    for (int32_t id = 0; id < vocab; ++id) {
        if (is_end_[id] || token_bytes_[id].empty()) continue;
        texts.push_back(id);
        plain_length[id] = plain_string_length(token_bytes_[id]);
        if (plain_length[id] < 0) not_plain.push_back(id);
        longest = std::max(longest, plain_length[id]);
    }
    plain_within_.assign(longest + 1, std::vector<uint64_t>((token_bytes_.size() + 63) / 64, 0));
    for (int32_t id = 0; id < vocab; ++id) {
        for (int k = plain_length[id]; k >= 0 && k <= longest; ++k) set_bit(plain_within_[k], id);
    }
    all_ = build_trie(token_bytes_, texts);
    not_plain_ = build_trie(token_bytes_, not_plain);
}

std::vector<std::string> TokenMasker::bytes_of(const tokenizer::Tokenizer& tokenizer) {
    std::vector<std::string> out(tokenizer.vocab_size());
    for (uint32_t id = 0; id < out.size(); ++id) {
        if (tokenizer.is_special(id)) continue;
        try {
            out[id] = tokenizer.token_to_piece(id);
        } catch (const tokenizer::TokenizerError&) {
            // an id the vocabulary skips: never allowed
        }
    }
    return out;
}

TokenMasker::Trie TokenMasker::build_trie(const std::vector<std::string>& token_bytes,
                                          const std::vector<int32_t>& ids) {
    Trie trie;
    trie.tokens = ids;
    std::sort(trie.tokens.begin(), trie.tokens.end(),
              [&](int32_t a, int32_t b) { return token_bytes[a] < token_bytes[b]; });
    trie.nodes.emplace_back();
    // Sorted, a node's tokens are one run: those exactly as long as its
    // depth come first, then one run per next byte, in byte order.
    struct Pending {
        uint32_t node, lo, hi;
        size_t depth;
    };
    std::vector<Pending> todo{{0, 0, static_cast<uint32_t>(trie.tokens.size()), 0}};
    while (!todo.empty()) {
        const Pending p = todo.back();
        todo.pop_back();
        trie.max_depth = std::max(trie.max_depth, p.depth);
        uint32_t i = p.lo;
        while (i < p.hi && token_bytes[trie.tokens[i]].size() == p.depth) ++i;
        trie.nodes[p.node].first_token = p.lo;
        trie.nodes[p.node].last_token = i;
        trie.nodes[p.node].first_child = static_cast<uint32_t>(trie.nodes.size());
        while (i < p.hi) {
            const char byte = token_bytes[trie.tokens[i]][p.depth];
            uint32_t j = i;
            while (j < p.hi && token_bytes[trie.tokens[j]][p.depth] == byte) ++j;
            const auto child = static_cast<uint32_t>(trie.nodes.size());
            trie.nodes.push_back(Trie::Node{.byte = static_cast<uint8_t>(byte)});
            ++trie.nodes[p.node].child_count;
            todo.push_back({child, i, j, p.depth + 1});
            i = j;
        }
    }
    return trie;
}

void TokenMasker::walk(const Grammar& grammar, const Trie& trie, const GrammarState& state,
                       std::vector<uint64_t>& bits) {
    // levels[d]: the state after the first d bytes of the current path; kept
    // per thread so their buffers are reused from mask to mask.
    thread_local std::vector<GrammarState> levels;
    if (levels.size() < trie.max_depth + 1) levels.resize(trie.max_depth + 1);
    levels[0] = state;
    struct Visit {
        uint32_t node;
        uint32_t depth;  // of the node's parent
    };
    thread_local std::vector<Visit> todo;
    todo.clear();
    const Trie::Node& root = trie.nodes[0];
    for (uint32_t c = root.first_child + root.child_count; c-- > root.first_child;) todo.push_back({c, 0});
    while (!todo.empty()) {
        const Visit v = todo.back();
        todo.pop_back();
        const Trie::Node& node = trie.nodes[v.node];
        // Depth-first, so levels[v.depth] still holds this node's parent.
        if (!grammar.step(levels[v.depth], node.byte, levels[v.depth + 1])) continue;
        for (uint32_t t = node.first_token; t < node.last_token; ++t) set_bit(bits, trie.tokens[t]);
        for (uint32_t c = node.first_child + node.child_count; c-- > node.first_child;) {
            todo.push_back({c, v.depth + 1});
        }
    }
}

void TokenMasker::allowed(const Grammar& grammar, const GrammarState& state, std::vector<uint64_t>& bits) const {
    const uint32_t room = grammar.plain_text_room(state);
    if (room > 0) {
        bits = plain_within_[std::min<size_t>(room, plain_within_.size() - 1)];
        walk(grammar, not_plain_, state, bits);
    } else {
        bits.assign(plain_within_.back().size(), 0);
        walk(grammar, all_, state, bits);
    }
    if (grammar.accepts_end(state)) {
        for (int32_t id : end_tokens_) {
            if (id >= 0 && id < vocab_size()) set_bit(bits, id);
        }
    }
}

bool TokenMasker::allows(const Grammar& grammar, const GrammarState& state, int32_t token) const {
    if (token < 0 || token >= vocab_size()) return false;
    if (is_end_[token]) return grammar.accepts_end(state);
    if (token_bytes_[token].empty()) return false;
    GrammarState copy = state;
    return grammar.advance(copy, token_bytes_[token]);
}

int32_t TokenMasker::vocab_size() const { return static_cast<int32_t>(token_bytes_.size()); }

}  // namespace tf::grammar
