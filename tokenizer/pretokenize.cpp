#include "tokenizer/pretokenize.h"

#include <pcre2.h>

#include "tokenizer/error.h"
#include "tokenizer/utf8.h"

namespace tf::tokenizer {

namespace {

struct MatchData {
    pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
    pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 1024 * 1024, nullptr);
    pcre2_match_context* context = pcre2_match_context_create(nullptr);
    MatchData() { pcre2_jit_stack_assign(context, nullptr, stack); }
    ~MatchData() {
        pcre2_match_context_free(context);
        pcre2_jit_stack_free(stack);
        pcre2_match_data_free(data);
    }
};

MatchData& thread_match_data() {
    thread_local MatchData m;
    return m;
}

using Range = std::pair<uint32_t, uint32_t>;

// Splits [offset, offset+length) of `base` by the step's delimiter and
// appends the resulting pieces to `out`.
void split_range(const PreTokenizeStep& step, std::string_view base, Range range, std::vector<Range>& out) {
    const std::string_view text = base.substr(range.first, range.second);
    struct Segment {
        size_t begin, end;
        bool delimiter;
    };
    std::vector<Segment> segments;
    size_t at = 0;
    while (at < text.size()) {
        size_t begin = 0, end = 0;
        bool found = false;
        if (step.regex) {
            found = step.regex->find(text, at, begin, end);
        } else if (!step.literal.empty()) {
            begin = text.find(step.literal, at);
            found = begin != std::string_view::npos;
            end = found ? begin + step.literal.size() : 0;
        }
        if (!found) break;
        if (end == begin) {  // an empty match: step over one character
            size_t n = utf8::sequence_length(text, begin);
            at = begin + (n == 0 ? 1 : n);
            continue;
        }
        if (begin > at) segments.push_back({at, begin, false});
        segments.push_back({begin, end, true});
        at = end;
    }
    if (at < text.size()) segments.push_back({at, text.size(), false});
    if (step.invert) {
        for (Segment& s : segments) s.delimiter = !s.delimiter;
    }

    const size_t first_out = out.size();
    const auto out_empty_since = [](const std::vector<Range>& o, size_t first) { return o.size() == first; };
    const auto emit = [&](size_t begin, size_t end) {
        out.emplace_back(static_cast<uint32_t>(range.first + begin), static_cast<uint32_t>(end - begin));
    };
    switch (step.behavior) {
        case SplitBehavior::isolated:
            for (const Segment& s : segments) emit(s.begin, s.end);
            break;
        case SplitBehavior::removed:
            for (const Segment& s : segments) {
                if (!s.delimiter) emit(s.begin, s.end);
            }
            break;
        // The three merging behaviors follow HF's SplitDelimiterBehavior.
        case SplitBehavior::merged_with_previous: {
            bool previous_delimiter = false;
            for (const Segment& s : segments) {
                if (s.delimiter && !previous_delimiter && !out_empty_since(out, first_out)) {
                    out.back().second += static_cast<uint32_t>(s.end - s.begin);
                } else {
                    emit(s.begin, s.end);
                }
                previous_delimiter = s.delimiter;
            }
            break;
        }
        case SplitBehavior::merged_with_next: {
            // Walk backwards: a delimiter joins the piece after it unless that one is a delimiter too.
            std::vector<Range> reversed;
            bool previous_delimiter = false;
            for (size_t i = segments.size(); i-- > 0;) {
                const Segment& s = segments[i];
                if (s.delimiter && !previous_delimiter && !reversed.empty()) {
                    reversed.back().second += static_cast<uint32_t>(s.end - s.begin);
                    reversed.back().first = static_cast<uint32_t>(range.first + s.begin);
                } else {
                    reversed.emplace_back(static_cast<uint32_t>(range.first + s.begin), static_cast<uint32_t>(s.end - s.begin));
                }
                previous_delimiter = s.delimiter;
            }
            out.insert(out.end(), reversed.rbegin(), reversed.rend());
            break;
        }
        case SplitBehavior::contiguous: {
            bool previous_delimiter = false;
            for (const Segment& s : segments) {
                if (s.delimiter && previous_delimiter) {
                    out.back().second += static_cast<uint32_t>(s.end - s.begin);
                } else {
                    emit(s.begin, s.end);
                }
                previous_delimiter = s.delimiter;
            }
            break;
        }
    }
}

// Rebuilds `pieces` with each piece passed through `rewrite`.
template <typename Rewrite>
void rewrite_pieces(Pieces& pieces, Rewrite rewrite) {
    std::string storage;
    std::vector<Range> ranges;
    storage.reserve(pieces.base.size() + pieces.ranges.size() * 3);
    for (size_t i = 0; i < pieces.ranges.size(); ++i) {
        const size_t before = storage.size();
        rewrite(i, pieces.piece(i), storage);
        ranges.emplace_back(static_cast<uint32_t>(before), static_cast<uint32_t>(storage.size() - before));
    }
    pieces.storage = std::move(storage);
    pieces.base = pieces.storage;
    pieces.ranges = std::move(ranges);
}

const std::shared_ptr<const Regex>& gpt2_regex() {
    static const std::shared_ptr<const Regex> regex = std::make_shared<Regex>(kGpt2Pattern, "ByteLevel");
    return regex;
}

}  // namespace

Regex::Regex(const std::string& pattern, const std::string& where) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
    if (code == nullptr) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(error, message, sizeof message);
        throw TokenizerError(where + ": regex '" + pattern + "' does not compile at offset " + std::to_string(offset) +
                             ": " + reinterpret_cast<const char*>(message));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter when JIT is unavailable
    code_ = code;
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

bool Regex::find(std::string_view text, size_t from, size_t& begin, size_t& end) const {
    MatchData& m = thread_match_data();
    const int rc = pcre2_match(static_cast<const pcre2_code*>(code_), reinterpret_cast<PCRE2_SPTR>(text.data()),
                               text.size(), from, PCRE2_NO_UTF_CHECK, m.data, m.context);
    if (rc == PCRE2_ERROR_NOMATCH) return false;
    if (rc < 0) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(rc, message, sizeof message);
        throw TokenizerError(std::string("pre-tokenizer regex failed: ") + reinterpret_cast<const char*>(message));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(m.data);
    begin = ovector[0];
    end = ovector[1];
    return true;
}

void PreTokenizer::run(std::string_view text, bool first_section, Pieces& out) const {
    out.storage.clear();
    out.base = text;
    out.ranges.clear();
    if (!text.empty()) out.ranges.emplace_back(0, static_cast<uint32_t>(text.size()));
    std::vector<Range> next;
    for (const PreTokenizeStep& step : steps_) {
        switch (step.kind) {
            case PreTokenizeStep::Kind::split:
                next.clear();
                for (Range r : out.ranges) split_range(step, out.base, r, next);
                out.ranges.swap(next);
                break;
            case PreTokenizeStep::Kind::byte_level:
                if (step.add_prefix_space) {
                    rewrite_pieces(out, [](size_t, std::string_view piece, std::string& storage) {
                        if (piece.empty() || piece.front() != ' ') storage.push_back(' ');
                        storage.append(piece);
                    });
                }
                if (step.use_regex) {
                    next.clear();
                    PreTokenizeStep gpt2;
                    gpt2.regex = gpt2_regex();
                    for (Range r : out.ranges) split_range(gpt2, out.base, r, next);
                    out.ranges.swap(next);
                }
                break;
            case PreTokenizeStep::Kind::metaspace: {
                const std::string& rep = step.replacement;
                rewrite_pieces(out, [&](size_t i, std::string_view piece, std::string& storage) {
                    const bool prepend = step.prepend_scheme == PrependScheme::always ||
                                         (step.prepend_scheme == PrependScheme::first && first_section && i == 0);
                    std::string replaced;
                    for (char c : piece) {
                        if (c == ' ') {
                            replaced += rep;
                        } else {
                            replaced.push_back(c);
                        }
                    }
                    if (prepend && replaced.compare(0, rep.size(), rep) != 0) storage.append(rep);
                    storage.append(replaced);
                });
                if (step.split) {
                    PreTokenizeStep by_replacement;
                    by_replacement.literal = rep;
                    by_replacement.behavior = SplitBehavior::merged_with_next;
                    next.clear();
                    for (Range r : out.ranges) split_range(by_replacement, out.base, r, next);
                    out.ranges.swap(next);
                }
                break;
            }
        }
    }
}

}  // namespace tf::tokenizer
