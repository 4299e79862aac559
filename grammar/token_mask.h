// Which tokens may come next under a Grammar: the mask the sampler applies
// at every position of a constrained stream (draft rows included).
//
// The vocabulary's byte strings sit in a trie, so the mask walks each shared
// prefix once: at every trie node the grammar state of the parent is stepped
// by one byte into a buffer kept per depth, and a subtree is dropped as soon
// as its bytes leave the language. Inside a string, tokens of plain text (no
// quote, backslash or control byte, whole UTF-8 characters) that fit the
// string's room (Grammar::plain_text_room) are allowed without walking them;
// only the rest of the vocabulary, which has its own trie, is walked.
//
//   TokenMasker masker(TokenMasker::bytes_of(tokenizer), {eos});
//   std::vector<uint64_t> bits;
//   masker.allowed(*grammar, state, bits);
//
// Thread-safety: immutable after construction; allowed() and allows() may
// run on any number of threads at once (their scratch is thread-local).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "tokenizer/tokenizer.h"

namespace tf::grammar {

class TokenMasker {
public:
    // token_bytes[id]: the bytes the token decodes to (byte-level BPE
    // already undone); an empty entry is never allowed (special tokens).
    // end_tokens: EOS ids, allowed exactly when grammar.accepts_end(state).
    TokenMasker(std::vector<std::string> token_bytes, std::vector<int32_t> end_tokens);

    // token_bytes for the constructor: each token's bytes, empty for special
    // tokens and ids the vocabulary skips.
    static std::vector<std::string> bytes_of(const tokenizer::Tokenizer& tokenizer);

    // bits[id / 64] bit (id % 64) set: token `id` may come next. bits is
    // resized to cover the vocabulary.
    void allowed(const Grammar& grammar, const GrammarState& state, std::vector<uint64_t>& bits) const;
    bool allows(const Grammar& grammar, const GrammarState& state, int32_t token) const;
    int32_t vocab_size() const;

private:
    struct Trie {
        struct Node {
            uint32_t first_child = 0;  // children are nodes [first_child, first_child + child_count)
            uint32_t child_count = 0;
            uint32_t first_token = 0;  // tokens spelled exactly by this node: tokens[first_token, last_token)
            uint32_t last_token = 0;
            uint8_t byte = 0;  // the byte on the edge into this node
        };
        std::vector<Node> nodes;  // nodes[0]: the root (the empty prefix)
        std::vector<int32_t> tokens;
        size_t max_depth = 0;
    };

    static Trie build_trie(const std::vector<std::string>& token_bytes, const std::vector<int32_t>& ids);
    static void walk(const Grammar& grammar, const Trie& trie, const GrammarState& state, std::vector<uint64_t>& bits);

    std::vector<std::string> token_bytes_;
    std::vector<int32_t> end_tokens_;
    std::vector<bool> is_end_;
    Trie all_;        // every token with bytes, end tokens excluded
    Trie not_plain_;  // the tokens of all_ that are not plain string text
    // plain_within_[k]: the plain-text tokens of at most k code points, as a
    // mask; the last one holds them all.
    std::vector<std::vector<uint64_t>> plain_within_;
};

}  // namespace tf::grammar
