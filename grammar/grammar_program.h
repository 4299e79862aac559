// The compiled form of a Grammar: a table of nodes that refer to each other
// by index (so $ref recursion is just a cycle in the table). Internal to
// engine/grammar*.cpp; immutable once built, like the Grammar that owns it.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grammar/grammar.h"

namespace tf::grammar {

enum class NodeKind : uint8_t {
    literal,   // `text`, byte for byte
    string,    // a JSON string of `min`..`max` code points
    number,    // a JSON number; `integer`: no fraction or exponent
    object,    // `properties` in order, then extra keys when `additional` is set
    array,     // `min`..`max` elements of `item`
    any_of,    // any one of `children`
    sequence,  // `children` one after another
};

inline constexpr uint32_t kUnbounded = std::numeric_limits<uint32_t>::max();
inline constexpr uint32_t kNoNode = std::numeric_limits<uint32_t>::max();

struct GrammarProperty {
    uint32_t key = 0;    // literal node: the name as JSON text, quotes included
    uint32_t value = 0;  // node of the value
    bool required = false;
};

// A trie of the declared property names (their JSON text without quotes),
// which an object's extra-key string must not spell.
struct KeyTrieNode {
    std::vector<std::pair<uint8_t, uint32_t>> children;  // (byte, node)
    bool name_ends = false;
};
inline constexpr size_t kMaxKeyTrieNodes = 0xFFFE;  // the frame keeps a node in 16 bits

struct GrammarNode {
    NodeKind kind = NodeKind::literal;
    std::string text;      // literal; never empty
    bool integer = false;  // number
    uint32_t min = 0;      // string: code points; array: elements
    uint32_t max = kUnbounded;
    std::vector<GrammarProperty> properties;  // object, in output order
    // object: required_from[i] is true when a property at index >= i is
    // required, so the object may close after property i-1 only if false.
    std::vector<bool> required_from;
    uint32_t additional = kNoNode;           // object: value node of extra keys
    uint32_t extra_key = kNoNode;            // object: string node of extra keys
    std::vector<KeyTrieNode> excluded_keys;  // string: names it must not spell; empty: any
    uint32_t item = kNoNode;                 // array
    std::vector<uint32_t> children;          // any_of, sequence
};

struct Grammar::Program {
    std::vector<GrammarNode> nodes;
    uint32_t root = 0;
};

// Builds node tables; the schema compiler and any_json_object() share it.
class ProgramBuilder {
public:
    uint32_t literal(std::string text);
    uint32_t string(uint32_t min = 0, uint32_t max = kUnbounded);
    uint32_t number(bool integer);
    uint32_t boolean();
    uint32_t null();
    uint32_t any_of(std::vector<uint32_t> children);
    uint32_t sequence(std::vector<uint32_t> children);
    uint32_t array(uint32_t item, uint32_t min = 0, uint32_t max = kUnbounded);
    // `additional`: kNoNode for additionalProperties false.
    uint32_t object(std::vector<GrammarProperty> properties, uint32_t additional);
    // Any JSON value with objects and arrays nested at most `depth` deep.
    uint32_t any_value(int depth);

    uint32_t reserve();  // a node to be filled in later (a $ref target)
    GrammarNode& at(uint32_t id) { return program_.nodes[id]; }
    Grammar::Program finish(uint32_t root);

private:
    uint32_t add(GrammarNode node);
    Grammar::Program program_;
    std::vector<uint32_t> any_value_by_depth_;
};

Grammar::Program compile_schema(std::string_view schema_json, std::string prefix, std::string suffix,
                                std::string_view field);

}  // namespace tf::grammar
