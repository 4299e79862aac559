#include "tokenizer/identity.h"

#include <openssl/evp.h>

#include <algorithm>
#include <memory>

#include "tokenizer/added_tokens.h"
#include "tokenizer/tokenizer.h"

namespace tf::tokenizer {

namespace {

// Length-prefixed little-endian fields: no two different contents serialize
// to the same bytes.
class Digest {
public:
    Digest() : ctx_(EVP_MD_CTX_new(), &EVP_MD_CTX_free) {
        if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) {
            throw TokenizerError("identity: cannot initialise SHA-256 (OpenSSL)");
        }
    }
    void u32(uint32_t v) {
        const unsigned char bytes[4] = {static_cast<unsigned char>(v), static_cast<unsigned char>(v >> 8),
                                        static_cast<unsigned char>(v >> 16), static_cast<unsigned char>(v >> 24)};
        EVP_DigestUpdate(ctx_.get(), bytes, sizeof bytes);
    }
    void text(std::string_view s) {
        u32(static_cast<uint32_t>(s.size()));
        EVP_DigestUpdate(ctx_.get(), s.data(), s.size());
    }
    std::string hex() {
        unsigned char out[EVP_MAX_MD_SIZE];
        unsigned int n = 0;
        EVP_DigestFinal_ex(ctx_.get(), out, &n);
        static const char* digits = "0123456789abcdef";
        std::string hex;
        for (unsigned int i = 0; i < n; ++i) {
            hex.push_back(digits[out[i] >> 4]);
            hex.push_back(digits[out[i] & 15]);
        }
        return hex;
    }

private:
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx_;
};

using Spelled = std::vector<std::pair<std::string, uint32_t>>;
using Merges = std::vector<std::pair<std::string, std::string>>;

void sort_by_id(Spelled& tokens) {
    std::sort(tokens.begin(), tokens.end(), [](const auto& a, const auto& b) {
        return a.second != b.second ? a.second < b.second : a.first < b.first;
    });
}

// A labelled section of (id, spelling) pairs, then the merges: the part
// both versions hash the same way.
void hash_tokens_and_merges(Digest& d, const char* label, const Spelled& tokens, const Merges& merges) {
    d.text(label);
    d.u32(static_cast<uint32_t>(tokens.size()));
    for (const auto& [token, id] : tokens) {
        d.u32(id);
        d.text(token);
    }
    d.text("merges");
    d.u32(static_cast<uint32_t>(merges.size()));
    for (const auto& [left, right] : merges) {
        d.text(left);
        d.text(right);
    }
}

}  // namespace

TokenizerIdentity compute_identity(std::vector<std::pair<std::string, uint32_t>> vocab,
                                   const std::vector<std::pair<std::string, std::string>>& merges,
                                   std::vector<AddedToken> added, uint32_t vocab_size) {
    sort_by_id(vocab);
    std::sort(added.begin(), added.end(), [](const AddedToken& a, const AddedToken& b) {
        return a.id != b.id ? a.id < b.id : a.content < b.content;
    });
    Digest d;
    d.text("tensorfold tokenizer identity v1");
    hash_tokens_and_merges(d, "vocab", vocab, merges);
    d.text("added_tokens");
    d.u32(static_cast<uint32_t>(added.size()));
    for (const AddedToken& t : added) {
        d.u32(t.id);
        d.text(t.content);
        d.u32((t.special ? 1u : 0u) | (t.lstrip ? 2u : 0u) | (t.rstrip ? 4u : 0u) | (t.normalized ? 8u : 0u) |
              (t.single_word ? 16u : 0u));
    }
    d.text("vocab_size");
    d.u32(vocab_size);
    return TokenizerIdentity{d.hex(), vocab_size};
}

TokenizerIdentity compute_identity_v2(std::vector<std::pair<std::string, uint32_t>> tokens,
                                      const std::vector<std::pair<std::string, std::string>>& merges,
                                      std::vector<uint32_t> added_ids, uint32_t vocab_size) {
    sort_by_id(tokens);
    tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
    std::sort(added_ids.begin(), added_ids.end());
    added_ids.erase(std::unique(added_ids.begin(), added_ids.end()), added_ids.end());
    Digest d;
    d.text("tensorfold tokenizer identity v2");
    hash_tokens_and_merges(d, "tokens", tokens, merges);
    d.text("added_ids");
    d.u32(static_cast<uint32_t>(added_ids.size()));
    for (uint32_t id : added_ids) d.u32(id);
    d.text("vocab_size");
    d.u32(vocab_size);
    return TokenizerIdentity{d.hex(), vocab_size};
}

TokenizerIdentity tokenizer_identity(const Tokenizer& tokenizer) { return tokenizer.identity(); }

}  // namespace tf::tokenizer
