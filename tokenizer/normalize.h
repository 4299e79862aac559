// tokenizer.json's "normalizer": the steps applied to each stretch of text
// between added tokens before pre-tokenization. Immutable once built;
// thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tf::tokenizer {

struct NormalizeStep {
    enum class Kind { nfc, nfd, nfkc, nfkd, lowercase, prepend, replace, strip };
    Kind kind = Kind::nfc;
    std::string text;         // prepend: what to prepend; replace: the pattern (a plain string)
    std::string replacement;  // replace: what replaces it
    bool strip_left = false, strip_right = false;
};

class Normalizer {
public:
    Normalizer() = default;
    explicit Normalizer(std::vector<NormalizeStep> steps) : steps_(std::move(steps)) {}

    bool empty() const { return steps_.empty(); }
    // `text` must be valid UTF-8.
    std::string apply(std::string_view text) const;

private:
    std::vector<NormalizeStep> steps_;
};

}  // namespace tf::tokenizer
