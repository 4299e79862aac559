// Structured output: the language a constrained reply must stay inside
// (OpenAI's response_format json_object / json_schema, and tool calls forced
// by tool_choice). The engine asks, for every sampled position of a
// constrained stream (speculative draft rows included), which tokens may come
// next, so the grammar works on bytes and one byte at a time: a GrammarState
// is where a matcher stands after the text so far, advance() moves it on.
//
//   auto g = Grammar::from_schema(R"({"type":"object","properties":{"a":{"type":"integer"}}})");
//   GrammarState s = g->start();
//   g->advance(s, R"({"a": 12)");   // true: still inside the language
//   g->accepts_end(s);               // false: the object is not closed yet
//
// The JSON Schema subset (docs/structured-output.md says the same for users):
//   type          object, array, string, number, integer, boolean, null, or a
//                 list of them (any one of them); absent: inferred from
//                 properties/items when present, else any JSON value
//   properties    written in the schema's order; each may be skipped unless
//                 `required` names it
//   required      names from `properties`
//   additionalProperties  false: only `properties`; absent or true: extra
//                 keys (any JSON string) with any JSON value; a schema: extra
//                 keys whose values follow it. An extra key never spells a
//                 declared name (byte for byte: a \u escape can slip one
//                 through); extra keys are not checked against each other.
//   items         one schema for every element
//   minItems, maxItems, minLength, maxLength (code points; a \u surrogate
//                 pair counts as one)
//   enum, const   the values' compact JSON text, exactly (nlohmann's dump())
//   anyOf, oneOf  any one alternative (oneOf is not checked for exclusivity)
//   $ref          "#/$defs/NAME" or "#/definitions/NAME", recursion included
//   description, title, default, $schema, $id, examples, $defs, definitions:
//                 read past
// Any other keyword is a GrammarError that names it and its JSON pointer.
//
// Layout of the text, chosen so that a greedy model cannot pad forever:
// exactly one optional space after ':' and after ',', no whitespace anywhere
// else (not around the value, not after '{' or '[', not before '}' or ']').
// Properties come in the schema's order, which keeps the grammar small and
// deterministic. Numbers have at most 16 digits before the point, 16 after
// it and 2 in the exponent (so every number fits a double); integers have
// neither fraction nor exponent. Strings are JSON strings of valid UTF-8:
// escapes checked (a \u high surrogate must be followed by a \u low one), no
// raw control characters.
// any_json_object() is one object whose values are any JSON nested at most
// 16 deep, and so are values the schema leaves open ({} or no `items`).
// Safety bounds, so that no schema makes a byte cost without limit: at most
// 256 parses alive at once (more only arise from many anyOf alternatives that
// read alike for a long stretch; the ones past it are dropped) and stacks at
// most 96 deep (a recursive $ref nests no deeper).
//
// Thread-safety: a Grammar is immutable once built and may be shared by any
// number of threads (std::shared_ptr<const Grammar>). A GrammarState is a
// plain value: one per stream, copied freely. The matching functions use a
// thread-local scratch stack, so they never allocate once warm.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tf::grammar {

// The schema could not be turned into a grammar; the message names the
// field, the keyword and where in the schema it sits.
class GrammarError : public std::runtime_error {
public:
    using runtime_error::runtime_error;
};

// One level of one parse stack. The meaning of the fields depends on the
// node; callers treat it as opaque.
struct GrammarFrame {
    uint32_t node = 0;
    uint16_t phase = 0;
    uint16_t small = 0;
    uint32_t count = 0;
    uint32_t extra = 0;
    bool operator==(const GrammarFrame&) const = default;
};

// Where a matcher stands in the text so far: every parse that is still alive
// (anyOf and optional properties keep several), each a stack of frames, all
// waiting for the next byte. Opaque, copyable, cheap to copy.
struct GrammarState {
    std::vector<GrammarFrame> frames;  // the stacks one after another, bottom frame first
    std::vector<uint32_t> stack_ends;  // stack i is frames [stack_ends[i-1], stack_ends[i])
    bool complete = false;             // the text so far is a whole sentence

    void clear() {
        frames.clear();
        stack_ends.clear();
        complete = false;
    }
};

class Grammar {
public:
    // response_format json_object: one JSON object.
    static std::shared_ptr<const Grammar> any_json_object();

    // The language prefix + value + suffix, where value follows the schema
    // (tool calls wrap the JSON, e.g. "<tool_call>\n" ... "\n</tool_call>").
    // `field` names the schema in error messages. Throws GrammarError.
    static std::shared_ptr<const Grammar> from_schema(std::string_view schema_json, std::string prefix = {},
                                                      std::string suffix = {},
                                                      std::string_view field = "response_format.json_schema.schema");

    GrammarState start() const;

    // False: the bytes leave the language (`state` is then unspecified).
    bool advance(GrammarState& state, std::string_view bytes) const;

    // One byte from `from` into `to` (whose buffers are reused, so a caller
    // walking many candidates does not allocate). False: the byte leaves the
    // language. `from` and `to` must be different objects.
    bool step(const GrammarState& from, uint8_t byte, GrammarState& to) const;

    bool accepts_end(const GrammarState& state) const;   // the text so far is a complete sentence
    bool can_continue(const GrammarState& state) const;  // some non-empty continuation exists

    // How many code points of "plain" text (printable ASCII but '"' and
    // '\\', and whole UTF-8 characters) the state is sure to take:
    // kAnyPlainText when some parse is inside a string of unbounded length;
    // maxLength minus the length so far when the only parse is inside a
    // bounded string; else 0. With room r, a run of plain text of at most r
    // code points is allowed, and (for a single parse) a longer one is not.
    // TokenMasker uses it to allow such tokens without walking them.
    static constexpr uint32_t kAnyPlainText = UINT32_MAX;
    uint32_t plain_text_room(const GrammarState& state) const;

    struct Program;  // the compiled nodes (engine/grammar_program.h)
    explicit Grammar(Program program);
    ~Grammar();
    Grammar(const Grammar&) = delete;
    Grammar& operator=(const Grammar&) = delete;

private:
    std::unique_ptr<const Program> program_;
};

}  // namespace tf::grammar
