// tokenizer.json's "pre_tokenizer": splits normalized text into the pieces
// that BPE encodes one by one (GPT-4/Llama 3/Qwen split regexes run on PCRE2
// with UTF and UCP, JIT-compiled). Immutable once built; thread-safe (match
// data is per thread).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tf::tokenizer {

// A compiled PCRE2 pattern. Throws TokenizerError naming `where` when the
// pattern does not compile.
class Regex {
public:
    Regex(const std::string& pattern, const std::string& where);
    ~Regex();
    Regex(const Regex&) = delete;
    Regex& operator=(const Regex&) = delete;

    // The first match at or after `from` in `text` (valid UTF-8): true and
    // [begin, end), or false.
    bool find(std::string_view text, size_t from, size_t& begin, size_t& end) const;

private:
    void* code_ = nullptr;  // pcre2_code*
};

enum class SplitBehavior { isolated, removed, merged_with_previous, merged_with_next, contiguous };
enum class PrependScheme { always, first, never };

struct PreTokenizeStep {
    enum class Kind { split, byte_level, metaspace };
    Kind kind = Kind::split;
    // split: a regex, or a plain string when `regex` is null.
    std::shared_ptr<const Regex> regex;
    std::string literal;
    SplitBehavior behavior = SplitBehavior::isolated;
    bool invert = false;
    // byte_level (the byte mapping itself happens at load time, see byte_level.h)
    bool add_prefix_space = false;
    bool use_regex = false;
    // metaspace
    std::string replacement;
    PrependScheme prepend_scheme = PrependScheme::always;
    bool split = true;
};

// The pieces of one stretch of text: byte ranges into `base`, which is either
// the input itself or `storage` when a step rewrote the text.
struct Pieces {
    std::string storage;
    std::string_view base;
    std::vector<std::pair<uint32_t, uint32_t>> ranges;  // (offset, length) into base

    std::string_view piece(size_t i) const { return base.substr(ranges[i].first, ranges[i].second); }
};

class PreTokenizer {
public:
    PreTokenizer() = default;
    explicit PreTokenizer(std::vector<PreTokenizeStep> steps) : steps_(std::move(steps)) {}

    // `first_section`: the text starts the input (Metaspace's prepend_scheme "first").
    void run(std::string_view text, bool first_section, Pieces& out) const;

private:
    std::vector<PreTokenizeStep> steps_;
};

// GPT-2's split pattern, used by ByteLevel with use_regex.
inline constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

}  // namespace tf::tokenizer
