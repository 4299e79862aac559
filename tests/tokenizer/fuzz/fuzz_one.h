// One fuzz case: load a tokenizer.json text and exercise what loaded (encode
// the input, random ids through decode and the streaming detokenizer, a chat
// render). Shared by the ctest fuzz test and the libFuzzer target.
#pragma once

#include <cstdint>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace tf::tokenizer::fuzz {

struct Outcome {
    bool ok = true;          // only TokenizerErrors were thrown, and every invariant held
    bool loaded = false;
    std::string unexpected;  // what went wrong otherwise
};

inline Outcome exercise(const Tokenizer& tok, const std::string& text, uint64_t seed) {
    Outcome out;
    out.loaded = true;
    std::mt19937_64 rng(seed);
    try {
        const bool valid = utf8::first_invalid(text) == std::string::npos;
        std::vector<TokenId> ids;
        try {
            ids = tok.encode(text, rng() % 2 == 0, rng() % 2 == 0);
            if (!valid) return {false, true, "encode accepted text that is not UTF-8"};
        } catch (const TokenizerError&) {
            if (valid) throw;
        }
        for (TokenId id : ids) {
            if (id >= tok.vocab_size()) return {false, true, "encode produced id " + std::to_string(id) + " past the vocabulary"};
        }
        for (int k = 0; k < 8; ++k) ids.push_back(static_cast<TokenId>(rng() % (tok.vocab_size() + 2)));
        std::string decoded;
        try {
            decoded = tok.decode(ids);
        } catch (const TokenizerError&) {
        }
        if (utf8::first_invalid(decoded) != std::string::npos) return {false, true, "decode produced broken UTF-8"};
        Detokenizer d(tok, rng() % 2 == 0);
        for (TokenId id : ids) {
            try {
                if (utf8::first_invalid(d.push(id)) != std::string::npos) return {false, true, "a stream chunk is broken UTF-8"};
            } catch (const TokenizerError&) {
            }
        }
        d.finish();
        try {
            tok.render_chat({{{"user", text}}});
        } catch (const TokenizerError&) {
        }
    } catch (const TokenizerError&) {
        return {false, true, "encode rejected valid UTF-8"};
    } catch (const std::exception& e) {
        return {false, true, std::string("unexpected exception: ") + e.what()};
    }
    return out;
}

inline Outcome load_and_exercise(const std::string& json, uint64_t seed) {
    try {
        const Tokenizer tok = Tokenizer::from_json(json, "{\"chat_template\": \"{{ messages[0].content }}\"}");
        return exercise(tok, "ab abc  q [x] <s>x\xC3\xA9 12345 it's", seed);
    } catch (const TokenizerError&) {
        return {true, false, ""};
    } catch (const std::exception& e) {
        return {false, false, std::string("unexpected exception: ") + e.what()};
    }
}

}  // namespace tf::tokenizer::fuzz
