// JSON Schema to grammar nodes (the subset engine/grammar.h lists). The
// schema arrives as the JSON text of a request field, so this file parses it
// with nlohmann like model/model_config.cpp parses config.json; nothing
// JSON-typed leaves it.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "grammar/grammar_program.h"

namespace tf::grammar {

// ordered_json keeps members in the schema's order, which is the order
// properties are written in and the text enum/const values are matched as.
using json = nlohmann::ordered_json;

uint32_t ProgramBuilder::add(GrammarNode node) {
    program_.nodes.push_back(std::move(node));
    return static_cast<uint32_t>(program_.nodes.size() - 1);
}

uint32_t ProgramBuilder::literal(std::string text) {
    return add(GrammarNode{.kind = NodeKind::literal, .text = std::move(text)});
}

uint32_t ProgramBuilder::string(uint32_t min, uint32_t max) {
    return add(GrammarNode{.kind = NodeKind::string, .min = min, .max = max});
}

uint32_t ProgramBuilder::number(bool integer) { return add(GrammarNode{.kind = NodeKind::number, .integer = integer}); }

uint32_t ProgramBuilder::boolean() { return any_of({literal("true"), literal("false")}); }

uint32_t ProgramBuilder::null() { return literal("null"); }

uint32_t ProgramBuilder::any_of(std::vector<uint32_t> children) {
    return add(GrammarNode{.kind = NodeKind::any_of, .children = std::move(children)});
}

uint32_t ProgramBuilder::sequence(std::vector<uint32_t> children) {
    return add(GrammarNode{.kind = NodeKind::sequence, .children = std::move(children)});
}

uint32_t ProgramBuilder::array(uint32_t item, uint32_t min, uint32_t max) {
    return add(GrammarNode{.kind = NodeKind::array, .min = min, .max = max, .item = item});
}

uint32_t ProgramBuilder::object(std::vector<GrammarProperty> properties, uint32_t additional) {
    // An object frame names the property being read in 16 bits.
    if (properties.size() >= 0xFFFF) throw GrammarError("an object has more than 65534 properties");
    GrammarNode node{.kind = NodeKind::object};
    node.required_from.assign(properties.size() + 1, false);
    for (size_t i = properties.size(); i-- > 0;) {
        node.required_from[i] = properties[i].required || node.required_from[i + 1];
    }
    if (additional != kNoNode) {
        // Extra keys may not repeat a declared name: that would let a value
        // of any type stand in for a typed property.
        std::vector<KeyTrieNode> names(1);
        for (const GrammarProperty& p : properties) {
            const std::string& quoted = program_.nodes[p.key].text;
            uint32_t at = 0;
            for (size_t i = 1; i + 1 < quoted.size(); ++i) {
                const auto byte = static_cast<uint8_t>(quoted[i]);
                auto& children = names[at].children;
                auto it =
                    std::find_if(children.begin(), children.end(), [&](const auto& c) { return c.first == byte; });
                if (it != children.end()) {
                    at = it->second;
                    continue;
                }
                names.emplace_back();
                names[at].children.emplace_back(byte, static_cast<uint32_t>(names.size() - 1));
                at = static_cast<uint32_t>(names.size() - 1);
            }
            names[at].name_ends = true;
        }
        if (names.size() > kMaxKeyTrieNodes) {
            throw GrammarError("an object's property names are too long together (over " +
                               std::to_string(kMaxKeyTrieNodes) + " bytes) to keep extra keys apart from them");
        }
        node.extra_key = string();
        if (!properties.empty()) program_.nodes[node.extra_key].excluded_keys = std::move(names);
    }
    node.properties = std::move(properties);
    node.additional = additional;
    return add(std::move(node));
}

uint32_t ProgramBuilder::any_value(int depth) {
    if (depth < 0) depth = 0;
    if (any_value_by_depth_.size() > static_cast<size_t>(depth)) return any_value_by_depth_[depth];
    std::vector<uint32_t> kinds;
    if (depth > 0) {
        const uint32_t inner = any_value(depth - 1);
        kinds.push_back(object({}, inner));
        kinds.push_back(array(inner));
    }
    // The shallower levels are built by now, so this one goes at index `depth`.
    kinds.push_back(string());
    kinds.push_back(number(false));
    kinds.push_back(literal("true"));
    kinds.push_back(literal("false"));
    kinds.push_back(null());
    const uint32_t id = any_of(std::move(kinds));
    any_value_by_depth_.push_back(id);
    return id;
}

uint32_t ProgramBuilder::reserve() { return add(GrammarNode{.kind = NodeKind::any_of}); }

Grammar::Program ProgramBuilder::finish(uint32_t root) {
    program_.root = root;
    return std::move(program_);
}

namespace {

// Values of unconstrained schemas ({} or an absent `items`) nest this deep.
constexpr int kAnyValueDepth = 16;

const std::set<std::string, std::less<>> kIgnored = {"description", "title",    "default", "$schema",
                                                     "$id",         "examples", "$defs",   "definitions"};
const std::set<std::string, std::less<>> kSupported = {"type",      "properties", "required", "additionalProperties",
                                                       "items",     "enum",       "const",    "anyOf",
                                                       "oneOf",     "$ref",       "minItems", "maxItems",
                                                       "minLength", "maxLength"};

std::string pointer_token(const std::string& key) {
    std::string out;
    for (char c : key) {
        if (c == '~') {
            out += "~0";
        } else if (c == '/') {
            out += "~1";
        } else {
            out += c;
        }
    }
    return out;
}

class SchemaCompiler {
public:
    SchemaCompiler(const json& root, std::string_view field) : root_(root), field_(field) {}

    uint32_t compile(const json& schema, const std::string& path) {
        if (schema.is_boolean()) {
            if (!schema.get<bool>()) fail(path, "the schema 'false' matches nothing");
            return b_.any_value(kAnyValueDepth);
        }
        if (!schema.is_object()) fail(path, "a schema must be an object or a boolean");
        for (const auto& [key, value] : schema.items()) {
            if (!kSupported.contains(key) && !kIgnored.contains(key)) {
                fail(path, "keyword '" + key + "' is not supported");
            }
        }
        for (const char* alone : {"$ref", "anyOf", "oneOf"}) {
            if (!schema.contains(alone)) continue;
            for (const auto& [key, value] : schema.items()) {
                if (key != alone && kSupported.contains(key)) {
                    fail(path, std::string("keyword '") + key + "' next to '" + alone + "' is not supported");
                }
            }
        }
        if (schema.contains("$ref")) return ref(schema["$ref"], path);
        if (schema.contains("anyOf")) return alternatives(schema["anyOf"], path + "/anyOf", "anyOf");
        if (schema.contains("oneOf")) return alternatives(schema["oneOf"], path + "/oneOf", "oneOf");
        if (schema.contains("enum") && schema.contains("const")) fail(path, "'enum' and 'const' together");
        if (schema.contains("const")) return b_.literal(schema["const"].dump());
        if (schema.contains("enum")) return enumeration(schema["enum"], path);
        return typed(schema, path);
    }

    ProgramBuilder& builder() { return b_; }

    // A $ref that reaches itself through anyOf/oneOf alternatives and other
    // $refs alone would recurse without writing a byte: refused here.
    void refuse_empty_cycles() {
        for (const auto& [text, id] : refs_) {
            std::vector<uint32_t> todo = b_.at(id).children;
            std::set<uint32_t> seen;
            while (!todo.empty()) {
                const uint32_t at = todo.back();
                todo.pop_back();
                if (at == id) fail("", "'$ref' '" + text + "' reaches itself before writing anything");
                if (!seen.insert(at).second || b_.at(at).kind != NodeKind::any_of) continue;
                for (uint32_t child : b_.at(at).children) todo.push_back(child);
            }
        }
    }

private:
    [[noreturn]] void fail(const std::string& path, const std::string& what) const {
        throw GrammarError(std::string(field_) + ": " + what + " (at " + (path.empty() ? "the root" : path) + ")");
    }

    uint32_t ref(const json& target, const std::string& path) {
        if (!target.is_string()) fail(path, "'$ref' must be a string");
        const std::string text = target.get<std::string>();
        if (auto it = refs_.find(text); it != refs_.end()) return it->second;
        std::string section;
        for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
            if (text.starts_with(prefix)) section = std::string(prefix).substr(2, std::string(prefix).size() - 3);
        }
        if (section.empty()) {
            fail(path, "'$ref' '" + text + "' is not supported: only #/$defs/NAME and #/definitions/NAME are");
        }
        const std::string token = text.substr(section.size() + 3);
        std::string name;  // the JSON pointer token unescaped
        for (size_t i = 0; i < token.size(); ++i) {
            if (token[i] == '~' && i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
                name += token[i + 1] == '0' ? '~' : '/';
                ++i;
            } else {
                name += token[i];
            }
        }
        if (!root_.contains(section) || !root_[section].is_object() || !root_[section].contains(name)) {
            fail(path, "'$ref' target '" + text + "' does not exist");
        }
        // Reserved before compiling the target so that a recursive schema
        // refers back to this node instead of compiling forever.
        const uint32_t id = b_.reserve();
        refs_[text] = id;
        const uint32_t body = compile(root_[section][name], "/" + section + "/" + pointer_token(name));
        b_.at(id).children = {body};
        return id;
    }

    uint32_t alternatives(const json& list, const std::string& path, const char* keyword) {
        if (!list.is_array() || list.empty()) fail(path, std::string("'") + keyword + "' must be a non-empty array");
        std::vector<uint32_t> children;
        for (size_t i = 0; i < list.size(); ++i) children.push_back(compile(list[i], path + "/" + std::to_string(i)));
        return b_.any_of(std::move(children));
    }

    uint32_t enumeration(const json& list, const std::string& path) {
        if (!list.is_array() || list.empty()) fail(path + "/enum", "'enum' must be a non-empty array");
        std::vector<uint32_t> children;
        std::set<std::string> seen;
        for (const json& value : list) {
            if (std::string text = value.dump(); seen.insert(text).second) children.push_back(b_.literal(text));
        }
        return b_.any_of(std::move(children));
    }

    uint32_t bound(const json& schema, const char* keyword, const std::string& path, uint32_t absent) const {
        if (!schema.contains(keyword)) return absent;
        const json& v = schema[keyword];
        if (!v.is_number_unsigned() || v.get<uint64_t>() >= kUnbounded) {
            fail(path + "/" + keyword, std::string("'") + keyword + "' must be a non-negative integer");
        }
        return static_cast<uint32_t>(v.get<uint64_t>());
    }

    uint32_t typed(const json& schema, const std::string& path) {
        std::vector<std::string> types;
        if (schema.contains("type")) {
            const json& t = schema["type"];
            if (t.is_string()) {
                types.push_back(t.get<std::string>());
            } else if (t.is_array() && !t.empty()) {
                for (const json& one : t) {
                    if (!one.is_string()) fail(path + "/type", "'type' must be a string or a list of strings");
                    types.push_back(one.get<std::string>());
                }
            } else {
                fail(path + "/type", "'type' must be a string or a non-empty list of strings");
            }
        } else if (schema.contains("properties") || schema.contains("required") ||
                   schema.contains("additionalProperties")) {
            types.push_back("object");
        } else if (schema.contains("items") || schema.contains("minItems") || schema.contains("maxItems")) {
            types.push_back("array");
        } else if (schema.contains("minLength") || schema.contains("maxLength")) {
            types.push_back("string");
        } else {
            return b_.any_value(kAnyValueDepth);
        }
        std::vector<uint32_t> nodes;
        for (const std::string& type : types) nodes.push_back(one_type(schema, type, path));
        return nodes.size() == 1 ? nodes.front() : b_.any_of(std::move(nodes));
    }

    uint32_t one_type(const json& schema, const std::string& type, const std::string& path) {
        if (type == "string") {
            const uint32_t min = bound(schema, "minLength", path, 0);
            const uint32_t max = bound(schema, "maxLength", path, kUnbounded);
            if (min > max) fail(path, "'minLength' is greater than 'maxLength'");
            return b_.string(min, max);
        }
        if (type == "number" || type == "integer") return b_.number(type == "integer");
        if (type == "boolean") return b_.boolean();
        if (type == "null") return b_.null();
        if (type == "array") return array(schema, path);
        if (type == "object") return object(schema, path);
        fail(path + "/type", "type '" + type + "' is not supported");
    }

    uint32_t array(const json& schema, const std::string& path) {
        const uint32_t min = bound(schema, "minItems", path, 0);
        const uint32_t max = bound(schema, "maxItems", path, kUnbounded);
        if (min > max) fail(path, "'minItems' is greater than 'maxItems'");
        uint32_t item = 0;
        if (!schema.contains("items")) {
            item = b_.any_value(kAnyValueDepth);
        } else if (schema["items"].is_array()) {
            fail(path + "/items", "'items' as a list (tuple validation) is not supported");
        } else {
            item = compile(schema["items"], path + "/items");
        }
        return b_.array(item, min, max);
    }

    uint32_t object(const json& schema, const std::string& path) {
        std::set<std::string> required;
        if (schema.contains("required")) {
            const json& list = schema["required"];
            if (!list.is_array()) fail(path + "/required", "'required' must be an array of property names");
            for (const json& name : list) {
                if (!name.is_string()) fail(path + "/required", "'required' must be an array of property names");
                required.insert(name.get<std::string>());
            }
        }
        std::vector<GrammarProperty> properties;
        if (schema.contains("properties")) {
            const json& props = schema["properties"];
            if (!props.is_object()) fail(path + "/properties", "'properties' must be an object");
            if (props.size() >= 0xFFFF) fail(path + "/properties", "more than 65534 properties");
            for (const auto& [name, sub] : props.items()) {
                const uint32_t key = b_.literal(json(name).dump());
                const uint32_t value = compile(sub, path + "/properties/" + pointer_token(name));
                properties.push_back({key, value, required.contains(name)});
                required.erase(name);
            }
        }
        if (!required.empty()) {
            fail(path + "/required", "'required' names '" + *required.begin() + "', which is not in 'properties'");
        }
        uint32_t additional = kNoNode;
        if (!schema.contains("additionalProperties")) {
            additional = b_.any_value(kAnyValueDepth);
        } else if (const json& extra = schema["additionalProperties"]; extra.is_boolean()) {
            if (extra.get<bool>()) additional = b_.any_value(kAnyValueDepth);
        } else if (extra.is_object()) {
            additional = compile(extra, path + "/additionalProperties");
        } else {
            fail(path + "/additionalProperties", "'additionalProperties' must be a boolean or a schema");
        }
        return b_.object(std::move(properties), additional);
    }

    const json& root_;
    std::string_view field_;
    ProgramBuilder b_;
    std::map<std::string, uint32_t> refs_;
};

}  // namespace

Grammar::Program compile_schema(std::string_view schema_json, std::string prefix, std::string suffix,
                                std::string_view field) {
    const json root = json::parse(schema_json, nullptr, /*allow_exceptions=*/false);
    if (root.is_discarded()) throw GrammarError(std::string(field) + ": not valid JSON");
    SchemaCompiler compiler(root, field);
    const uint32_t value = compiler.compile(root, "");
    compiler.refuse_empty_cycles();
    ProgramBuilder& b = compiler.builder();
    std::vector<uint32_t> parts;
    if (!prefix.empty()) parts.push_back(b.literal(std::move(prefix)));
    parts.push_back(value);
    if (!suffix.empty()) parts.push_back(b.literal(std::move(suffix)));
    return b.finish(parts.size() == 1 ? value : b.sequence(std::move(parts)));
}

}  // namespace tf::grammar
