// Reading fields of a request body for the routes that translate another
// API's JSON (Anthropic Messages, OpenAI Responses) into native requests.
// They read `ordered_json`, so a tool's JSON Schema keeps its property
// order: forced calls and constrained output write properties in the order
// the schema lists them (docs/structured-output.md).
//
// Every failure is an ApiError(400) whose message starts with the field's
// full path ("messages[2].content[0].type: ...") and whose param is the
// top-level field, so a client sees what to fix. Pure; thread-safe.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <nlohmann/json.hpp>

#include "http/api_error.h"

namespace tf::http::json_fields {

using Json = nlohmann::ordered_json;

inline const char* type_name(const Json& value) {
    switch (value.type()) {
        case Json::value_t::null: return "null";
        case Json::value_t::boolean: return "a boolean";
        case Json::value_t::number_integer:
        case Json::value_t::number_unsigned: return "an integer";
        case Json::value_t::number_float: return "a number";
        case Json::value_t::string: return "a string";
        case Json::value_t::array: return "an array";
        case Json::value_t::object: return "an object";
        default: return "an unknown value";
    }
}

// "messages[2].content" -> "messages": the param clients key errors on.
inline std::string top_field(const std::string& where) { return where.substr(0, where.find_first_of(".[")); }

[[noreturn]] inline void fail(const std::string& where, const std::string& message) {
    throw bad_request(top_field(where), where + ": " + message);
}

[[noreturn]] inline void wrong_type(const std::string& where, const char* expected, const Json& got) {
    fail(where, std::string("expected ") + expected + ", got " + type_name(got));
}

inline Json parse_object(std::string_view body) {
    Json root = Json::parse(body, nullptr, false);
    if (root.is_discarded()) throw bad_request("", "request body is not valid JSON");
    if (!root.is_object()) throw bad_request("", std::string("request body: expected a JSON object, got ") + type_name(root));
    return root;
}

// A member that is absent or null counts as not given.
inline const Json* field(const Json& object, const char* name) {
    auto it = object.find(name);
    return it == object.end() || it->is_null() ? nullptr : &*it;
}

inline std::string at(const std::string& where, const char* name) { return where.empty() ? name : where + "." + name; }
inline std::string at(const std::string& where, size_t index) { return where + "[" + std::to_string(index) + "]"; }

inline std::optional<int64_t> integer(const Json& object, const char* name, const std::string& where = "") {
    const Json* v = field(object, name);
    if (!v) return std::nullopt;
    if (v->is_number_integer() || v->is_number_unsigned()) return v->get<int64_t>();
    if (v->is_number_float() && std::floor(v->get<double>()) == v->get<double>() && std::abs(v->get<double>()) < 1e15) {
        return static_cast<int64_t>(v->get<double>());
    }
    wrong_type(at(where, name), "an integer", *v);
}

inline std::optional<double> number(const Json& object, const char* name, const std::string& where = "") {
    const Json* v = field(object, name);
    if (!v) return std::nullopt;
    if (!v->is_number()) wrong_type(at(where, name), "a number", *v);
    return v->get<double>();
}

inline std::optional<bool> boolean(const Json& object, const char* name, const std::string& where = "") {
    const Json* v = field(object, name);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) wrong_type(at(where, name), "a boolean", *v);
    return v->get<bool>();
}

inline std::optional<std::string> string(const Json& object, const char* name, const std::string& where = "") {
    const Json* v = field(object, name);
    if (!v) return std::nullopt;
    if (!v->is_string()) wrong_type(at(where, name), "a string", *v);
    return v->get<std::string>();
}

inline std::string required_string(const Json& object, const char* name, const std::string& where = "") {
    std::optional<std::string> v = string(object, name, where);
    if (!v) fail(at(where, name), "required");
    return *v;
}

}  // namespace tf::http::json_fields
