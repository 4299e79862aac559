// The matcher: a set of pushdown stacks moved one byte at a time.
//
// Every node consumes at least one byte, and a state only holds stacks whose
// top frame waits for a byte. After a byte is fed to a top frame, expand()
// follows every move that needs no byte (push a child, pop a finished frame,
// choose an anyOf alternative, end a number or not) depth-first on one
// scratch stack, and records each configuration that waits for a byte. A
// finished root records `complete` instead. So nondeterminism (anyOf,
// optional properties, where a number ends) is a small set of live stacks,
// never backtracking.
#include "grammar/grammar.h"

#include <algorithm>
#include <utility>

#include "grammar/grammar_program.h"

namespace tf::grammar {
namespace {

// Deeper configurations are dropped: they only arise from $ref cycles that
// recurse without consuming bytes, or nesting no reply needs.
constexpr size_t kMaxStackDepth = 96;
// Live parses kept per state, so that a schema of many look-alike anyOf
// alternatives cannot make every byte cost without bound; parses past it are
// dropped (grammar.h says so).
constexpr size_t kMaxParses = 256;
constexpr int kMaxChoicesInARow = 64;
constexpr uint32_t kMaxNumberDigits = 16;
// Two exponent digits keep every number inside a double's range (1e308):
// JSON parsers such as nlohmann refuse numbers that overflow.
constexpr uint32_t kMaxExponentDigits = 2;
constexpr uint16_t kExtraKey = 0xFFFF;  // object frame: the value after an extra key

enum StringPhase : uint16_t { s_open, s_body, s_escape, s_hex, s_utf8, s_low_backslash, s_low_u, s_done };
// s_hex: `small` digits read so far; `extra` flags below.
constexpr uint32_t kHexLowHalf = 1;   // these four digits must be a low surrogate
constexpr uint32_t kHexFirstD = 2;    // the first digit was d/D
constexpr uint32_t kHexHighHalf = 4;  // these four digits are a high surrogate
// s_utf8: `small` continuation bytes left; `extra` = lowest | highest << 8 for the next one.

enum NumberPhase : uint16_t { n_start, n_sign, n_zero, n_int, n_dot, n_frac, n_exp, n_exp_sign, n_exp_digits };
enum ArrayPhase : uint16_t { a_open, a_first, a_after_item, a_comma, a_space, a_done };
// Object frames: `count` is the index of the next declared property that may
// come, `small` the property whose key was just read (kExtraKey for extra).
enum ObjectPhase : uint16_t { o_open, o_first, o_colon, o_after_colon, o_value, o_after_value, o_comma, o_key, o_done };

bool is_digit(uint8_t b) { return b >= '0' && b <= '9'; }
bool is_hex(uint8_t b) { return is_digit(b) || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F'); }

GrammarFrame fresh(uint32_t node) { return GrammarFrame{.node = node}; }

bool number_accepting(uint16_t phase) {
    return phase == n_zero || phase == n_int || phase == n_frac || phase == n_exp_digits;
}

// Whether some byte could still extend the number (else it must end here).
bool number_can_grow(const GrammarNode& n, const GrammarFrame& f) {
    switch (f.phase) {
        case n_zero: return !n.integer;
        case n_int: return f.count < kMaxNumberDigits || !n.integer;
        case n_exp_digits: return f.count < kMaxExponentDigits;
        default: return true;
    }
}

// Feeds one byte to a frame that waits for one; false: rejected.
bool feed_string(const GrammarNode& n, GrammarFrame& f, uint8_t b) {
    switch (f.phase) {
        case s_open:
            if (b != '"') return false;
            f.phase = s_body;
            return true;
        case s_body:
            if (b == '"') {
                if (f.count < n.min) return false;
                f.phase = s_done;
                return true;
            }
            if (f.count >= n.max || b < 0x20) return false;
            ++f.count;
            if (b == '\\') {
                f.phase = s_escape;
            } else if (b < 0x80) {
                // printable ASCII stays in the body
            } else if (b >= 0xC2 && b <= 0xDF) {
                f = {f.node, s_utf8, 1, f.count, 0x80 | 0xBF << 8};
            } else if (b >= 0xE0 && b <= 0xEF) {
                // E0 must not encode an overlong form, ED must not encode a surrogate.
                const uint32_t range = b == 0xE0   ? (0xA0 | 0xBF << 8)
                                       : b == 0xED ? (0x80 | 0x9F << 8)
                                                   : (0x80 | 0xBF << 8);
                f = {f.node, s_utf8, 2, f.count, range};
            } else if (b >= 0xF0 && b <= 0xF4) {
                // F0 must not be overlong, F4 must stay at or below U+10FFFF.
                const uint32_t range = b == 0xF0   ? (0x90 | 0xBF << 8)
                                       : b == 0xF4 ? (0x80 | 0x8F << 8)
                                                   : (0x80 | 0xBF << 8);
                f = {f.node, s_utf8, 3, f.count, range};
            } else {
                return false;
            }
            return true;
        case s_utf8:
            if (b < (f.extra & 0xFF) || b > (f.extra >> 8)) return false;
            f.extra = 0x80 | 0xBF << 8;
            if (--f.small == 0) f = {f.node, s_body, 0, f.count, 0};
            return true;
        case s_escape:
            if (b == 'u') {
                f = {f.node, s_hex, 0, f.count, 0};
                return true;
            }
            if (b != '"' && b != '\\' && b != '/' && b != 'b' && b != 'f' && b != 'n' && b != 'r' && b != 't')
                return false;
            f.phase = s_body;
            return true;
        case s_hex: {
            if (!is_hex(b)) return false;
            const bool d = b == 'd' || b == 'D';
            if (f.small == 0) {
                if ((f.extra & kHexLowHalf) && !d) return false;
                if (d) f.extra |= kHexFirstD;
            } else if (f.small == 1 && (f.extra & kHexFirstD)) {
                // The second digit decides: D8..DB opens a surrogate pair, DC..DF
                // closes one, D0..D7 is an ordinary character.
                const bool high = (b >= '8' && b <= '9') || (b >= 'a' && b <= 'b') || (b >= 'A' && b <= 'B');
                const bool low = (b >= 'c' && b <= 'f') || (b >= 'C' && b <= 'F');
                if (f.extra & kHexLowHalf) {
                    if (!low) return false;
                } else if (low) {
                    return false;
                } else if (high) {
                    f.extra |= kHexHighHalf;
                }
            }
            if (++f.small < 4) return true;
            f = {f.node, static_cast<uint16_t>((f.extra & kHexHighHalf) ? s_low_backslash : s_body), 0, f.count, 0};
            return true;
        }
        case s_low_backslash:
            if (b != '\\') return false;
            f.phase = s_low_u;
            return true;
        case s_low_u:
            if (b != 'u') return false;
            f = {f.node, s_hex, 0, f.count, kHexLowHalf};
            return true;
        default: return false;
    }
}

// A string that must not spell a declared property name: the top 16 bits
// of `extra` hold 1 + the key-trie node its bytes so far reach, or 0 once
// they left the trie (feed_string only uses the low 16 bits).
bool feed_excluding_string(const GrammarNode& n, GrammarFrame& f, uint8_t b) {
    uint32_t at = f.extra >> 16;
    const uint16_t before = f.phase;
    f.extra &= 0xFFFF;
    if (!feed_string(n, f, b)) return false;
    if (before == s_open) {
        at = 1;
    } else if (f.phase == s_done) {
        if (at != 0 && n.excluded_keys[at - 1].name_ends) return false;
    } else if (at != 0) {
        const auto& children = n.excluded_keys[at - 1].children;
        auto it = std::find_if(children.begin(), children.end(), [&](const auto& c) { return c.first == b; });
        at = it == children.end() ? 0 : it->second + 1;
    }
    f.extra |= at << 16;
    return true;
}

bool feed_number(const GrammarNode& n, GrammarFrame& f, uint8_t b) {
    auto to = [&](uint16_t phase, uint32_t digits) {
        f.phase = phase;
        f.count = digits;
        return true;
    };
    auto more_digits = [&](uint32_t limit) {
        if (f.count >= limit) return false;
        ++f.count;
        return true;
    };
    const bool fraction = !n.integer && b == '.';
    const bool exponent = !n.integer && (b == 'e' || b == 'E');
    switch (f.phase) {
        case n_start:
            if (b == '-') return to(n_sign, 0);
            [[fallthrough]];
        case n_sign:
            if (b == '0') return to(n_zero, 1);
            if (b >= '1' && b <= '9') return to(n_int, 1);
            return false;
        case n_zero:
        case n_int:
            if (is_digit(b) && f.phase == n_int) return more_digits(kMaxNumberDigits);
            if (fraction) return to(n_dot, 0);
            if (exponent) return to(n_exp, 0);
            return false;
        case n_dot: return is_digit(b) && to(n_frac, 1);
        case n_frac:
            if (is_digit(b)) return more_digits(kMaxNumberDigits);
            if (exponent) return to(n_exp, 0);
            return false;
        case n_exp:
            if (b == '+' || b == '-') return to(n_exp_sign, 0);
            [[fallthrough]];
        case n_exp_sign: return is_digit(b) && to(n_exp_digits, 1);
        case n_exp_digits: return is_digit(b) && more_digits(kMaxExponentDigits);
        default: return false;
    }
}

bool feed_array(const GrammarNode& n, GrammarFrame& f, uint8_t b) {
    switch (f.phase) {
        case a_open:
            if (b != '[') return false;
            f.phase = a_first;
            return true;
        case a_first:
            if (b != ']' || n.min > 0) return false;
            f.phase = a_done;
            return true;
        case a_after_item:
            if (b == ',' && f.count < n.max) {
                f.phase = a_comma;
                return true;
            }
            if (b == ']' && f.count >= n.min) {
                f.phase = a_done;
                return true;
            }
            return false;
        case a_comma:
            if (b != ' ') return false;
            f.phase = a_space;
            return true;
        default: return false;
    }
}

bool feed_object(const GrammarNode& n, GrammarFrame& f, uint8_t b) {
    const bool may_close = !n.required_from[f.count];
    const bool may_add = f.count < n.properties.size() || n.additional != kNoNode;
    switch (f.phase) {
        case o_open:
            if (b != '{') return false;
            f.phase = o_first;
            return true;
        case o_first:
            if (b != '}' || !may_close) return false;
            f.phase = o_done;
            return true;
        case o_colon:
            if (b != ':') return false;
            f.phase = o_after_colon;
            return true;
        case o_after_colon:
            if (b != ' ') return false;
            f.phase = o_value;
            return true;
        case o_after_value:
            if (b == ',' && may_add) {
                f.phase = o_comma;
                return true;
            }
            if (b == '}' && may_close) {
                f.phase = o_done;
                return true;
            }
            return false;
        case o_comma:
            if (b != ' ') return false;
            f.phase = o_key;
            return true;
        default: return false;
    }
}

// Follows the byte-free moves of one stack; see the file comment.
class Expander {
public:
    Expander(const Grammar::Program& program, GrammarState& out) : nodes_(program.nodes), out_(out) {}

    void expand(std::vector<GrammarFrame>& stack) {
        if (stack.empty()) {
            out_.complete = true;
            return;
        }
        if (stack.size() > kMaxStackDepth) return;
        const GrammarFrame top = stack.back();
        const GrammarNode& n = nodes_[top.node];
        switch (n.kind) {
            case NodeKind::literal:  // `count`: bytes matched (a long enum value outgrows `phase`)
                if (top.count < n.text.size()) return wait(stack);
                return pop(stack);
            case NodeKind::sequence:
                if (top.phase < n.children.size()) {
                    GrammarFrame next = top;
                    ++next.phase;
                    return push(stack, next, n.children[top.phase]);
                }
                return pop(stack);
            case NodeKind::any_of:
                // Chains of alternatives consume nothing; the schema compiler
                // refuses cycles among them, this bound only backs it up.
                if (++choices_in_a_row_ <= kMaxChoicesInARow) {
                    for (uint32_t child : n.children) {
                        stack.back() = fresh(child);
                        expand(stack);
                    }
                    stack.back() = top;
                }
                --choices_in_a_row_;
                return;
            case NodeKind::string:
                if (top.phase == s_done) return pop(stack);
                return wait(stack);
            case NodeKind::number:
                if (number_can_grow(n, top)) wait(stack);
                if (number_accepting(top.phase)) pop(stack);
                return;
            case NodeKind::array: return expand_array(stack, n, top);
            case NodeKind::object: return expand_object(stack, n, top);
        }
    }

private:
    void expand_array(std::vector<GrammarFrame>& stack, const GrammarNode& n, const GrammarFrame& top) {
        GrammarFrame next = top;
        next.phase = a_after_item;
        next.count = top.count + 1;
        switch (top.phase) {
            case a_first:
                if (n.min == 0) wait(stack);
                if (n.max > 0) push(stack, next, n.item);
                return;
            case a_comma: wait(stack); return push(stack, next, n.item);
            case a_space: return push(stack, next, n.item);
            case a_done: return pop(stack);
            default: return wait(stack);
        }
    }

    void expand_object(std::vector<GrammarFrame>& stack, const GrammarNode& n, const GrammarFrame& top) {
        switch (top.phase) {
            case o_first:
                if (!n.required_from[top.count]) wait(stack);
                return keys(stack, n, top);
            case o_after_colon: wait(stack); return value(stack, n, top);
            case o_value: return value(stack, n, top);
            case o_comma: wait(stack); return keys(stack, n, top);
            case o_key: return keys(stack, n, top);
            case o_done: return pop(stack);
            default: return wait(stack);
        }
    }

    // Every key that may come next: declared properties in order up to the
    // first required one (which cannot be skipped), then an extra key.
    void keys(std::vector<GrammarFrame>& stack, const GrammarNode& n, const GrammarFrame& top) {
        for (uint32_t j = top.count; j < n.properties.size(); ++j) {
            push(stack, GrammarFrame{top.node, o_colon, static_cast<uint16_t>(j), j + 1, 0}, n.properties[j].key);
            if (n.properties[j].required) break;
        }
        if (n.additional != kNoNode) {
            push(stack, GrammarFrame{top.node, o_colon, kExtraKey, top.count, 0}, n.extra_key);
        }
    }

    void value(std::vector<GrammarFrame>& stack, const GrammarNode& n, const GrammarFrame& top) {
        GrammarFrame next = top;
        next.phase = o_after_value;
        push(stack, next, top.small == kExtraKey ? n.additional : n.properties[top.small].value);
    }

    void push(std::vector<GrammarFrame>& stack, const GrammarFrame& parent, uint32_t child) {
        const GrammarFrame saved = stack.back();
        stack.back() = parent;
        stack.push_back(fresh(child));
        expand(stack);
        stack.pop_back();
        stack.back() = saved;
    }

    void pop(std::vector<GrammarFrame>& stack) {
        const GrammarFrame saved = stack.back();
        stack.pop_back();
        expand(stack);
        stack.push_back(saved);
    }

    // Records the stack as a live parse unless an equal one is recorded.
    void wait(const std::vector<GrammarFrame>& stack) {
        if (out_.stack_ends.size() >= kMaxParses) return;
        uint32_t begin = 0;
        for (uint32_t end : out_.stack_ends) {
            if (end - begin == stack.size() && std::equal(stack.begin(), stack.end(), out_.frames.begin() + begin)) {
                return;
            }
            begin = end;
        }
        out_.frames.insert(out_.frames.end(), stack.begin(), stack.end());
        out_.stack_ends.push_back(static_cast<uint32_t>(out_.frames.size()));
    }

    const std::vector<GrammarNode>& nodes_;
    GrammarState& out_;
    int choices_in_a_row_ = 0;
};

bool feed(const GrammarNode& n, GrammarFrame& f, uint8_t b) {
    switch (n.kind) {
        case NodeKind::literal:
            if (f.count >= n.text.size() || static_cast<uint8_t>(n.text[f.count]) != b) return false;
            ++f.count;
            return true;
        case NodeKind::string: return n.excluded_keys.empty() ? feed_string(n, f, b) : feed_excluding_string(n, f, b);
        case NodeKind::number: return feed_number(n, f, b);
        case NodeKind::array: return feed_array(n, f, b);
        case NodeKind::object: return feed_object(n, f, b);
        default: return false;  // any_of and sequence never wait for a byte
    }
}

std::vector<GrammarFrame>& scratch_stack() {
    thread_local std::vector<GrammarFrame> stack;
    return stack;
}

}  // namespace

Grammar::Grammar(Program program) : program_(std::make_unique<const Program>(std::move(program))) {}
Grammar::~Grammar() = default;

std::shared_ptr<const Grammar> Grammar::from_schema(std::string_view schema_json, std::string prefix,
                                                    std::string suffix, std::string_view field) {
    return std::make_shared<const Grammar>(compile_schema(schema_json, std::move(prefix), std::move(suffix), field));
}

std::shared_ptr<const Grammar> Grammar::any_json_object() {
    ProgramBuilder b;
    constexpr int kDepth = 16;  // the object itself is the first level
    const uint32_t root = b.object({}, b.any_value(kDepth - 1));
    return std::make_shared<const Grammar>(b.finish(root));
}

GrammarState Grammar::start() const {
    GrammarState state;
    std::vector<GrammarFrame>& stack = scratch_stack();
    stack.assign(1, fresh(program_->root));
    Expander(*program_, state).expand(stack);
    return state;
}

bool Grammar::step(const GrammarState& from, uint8_t byte, GrammarState& to) const {
    to.clear();
    std::vector<GrammarFrame>& stack = scratch_stack();
    Expander expander(*program_, to);
    uint32_t begin = 0;
    for (uint32_t end : from.stack_ends) {
        stack.assign(from.frames.begin() + begin, from.frames.begin() + end);
        begin = end;
        if (feed(program_->nodes[stack.back().node], stack.back(), byte)) expander.expand(stack);
    }
    return to.complete || !to.stack_ends.empty();
}

bool Grammar::advance(GrammarState& state, std::string_view bytes) const {
    thread_local GrammarState next;
    for (char c : bytes) {
        if (!step(state, static_cast<uint8_t>(c), next)) return false;
        std::swap(state, next);
    }
    return true;
}

bool Grammar::accepts_end(const GrammarState& state) const { return state.complete; }

bool Grammar::can_continue(const GrammarState& state) const { return !state.stack_ends.empty(); }

uint32_t Grammar::plain_text_room(const GrammarState& state) const {
    uint32_t room = 0;
    for (uint32_t end : state.stack_ends) {
        const GrammarFrame& top = state.frames[end - 1];
        const GrammarNode& n = program_->nodes[top.node];
        if (n.kind != NodeKind::string || top.phase != s_body) continue;
        if (n.max == kUnbounded) return kAnyPlainText;
        // With other parses alive, plain text a bounded string refuses might
        // still pass through them, so only a lone parse gives a room.
        if (state.stack_ends.size() == 1) room = n.max - top.count;
    }
    return room;
}

}  // namespace tf::grammar
