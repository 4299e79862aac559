#include "tokenizer/chat_template/value.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <unordered_set>

#include "tokenizer/error.h"

namespace tf::tokenizer::chat {

bool Value::truthy() const {
    switch (type) {
        case Type::undefined:
        case Type::none: return false;
        case Type::boolean: return b;
        case Type::integer: return i != 0;
        case Type::number: return d != 0;
        case Type::string: return !s.empty();
        case Type::array: return !array->empty();
        case Type::object: return !object->empty();
        case Type::function: return true;
    }
    return false;
}

const Value* Value::find(const std::string& key) const {
    if (type != Type::object) return nullptr;
    for (const auto& [k, v] : *object) {
        if (k == key) return &v;
    }
    return nullptr;
}

void Value::set(const std::string& key, Value v) {
    for (auto& [k, old] : *object) {
        if (k == key) {
            old = std::move(v);
            return;
        }
    }
    object->emplace_back(key, std::move(v));
}

namespace {

const void* identity(const Value& v) {
    if (v.type == Value::Type::array) return v.array.get();
    if (v.type == Value::Type::object) return v.object.get();
    return nullptr;
}

}  // namespace

bool holds(const Value& v, const Value& container) {
    const void* target = identity(container);
    if (target == nullptr) return false;
    // Depth-first over containers, each visited once so shared sub-values
    // (the same message dict in two lists) cost nothing extra.
    std::vector<const Value*> pending{&v};
    std::unordered_set<const void*> seen;
    while (!pending.empty()) {
        const Value* at = pending.back();
        pending.pop_back();
        const void* id = identity(*at);
        if (id == nullptr || !seen.insert(id).second) continue;
        if (id == target) return true;
        if (at->type == Value::Type::array) {
            for (const Value& item : *at->array) pending.push_back(&item);
        } else {
            for (const auto& entry : *at->object) pending.push_back(&entry.second);
        }
    }
    return false;
}

namespace {

std::string format_double(double d) {
    // Python's repr of a float: shortest round-tripping form, always with a '.' or exponent.
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    char buf[64];
    for (int precision = 1; precision <= 17; ++precision) {
        std::snprintf(buf, sizeof buf, "%.*g", precision, d);
        if (std::strtod(buf, nullptr) == d) break;
    }
    std::string out = buf;
    if (out.find_first_of(".en") == std::string::npos) out += ".0";
    return out;
}

void json_string(std::string& out, const std::string& s) {
    out.push_back('"');
    for (unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out.push_back(static_cast<char>(c));
                }
        }
    }
    out.push_back('"');
}

void json_value(std::string& out, const Value& v, int indent, int depth) {
    const auto newline = [&](int d) {
        out.push_back('\n');
        out.append(static_cast<size_t>(indent * d), ' ');
    };
    switch (v.type) {
        case Value::Type::undefined:
        case Value::Type::none: out += "null"; break;
        case Value::Type::boolean: out += v.b ? "true" : "false"; break;
        case Value::Type::integer: out += std::to_string(v.i); break;
        case Value::Type::number: out += format_double(v.d); break;
        case Value::Type::string: json_string(out, v.s); break;
        case Value::Type::function: throw TokenizerError("chat template: tojson cannot serialize a function");
        case Value::Type::array: {
            if (v.array->empty()) {
                out += "[]";
                break;
            }
            out.push_back('[');
            for (size_t k = 0; k < v.array->size(); ++k) {
                if (k > 0) out += indent < 0 ? ", " : ",";
                if (indent >= 0) newline(depth + 1);
                json_value(out, (*v.array)[k], indent, depth + 1);
            }
            if (indent >= 0) newline(depth);
            out.push_back(']');
            break;
        }
        case Value::Type::object: {
            if (v.object->empty()) {
                out += "{}";
                break;
            }
            out.push_back('{');
            bool first = true;
            for (const auto& [key, item] : *v.object) {
                if (!first) out += indent < 0 ? ", " : ",";
                first = false;
                if (indent >= 0) newline(depth + 1);
                json_string(out, key);
                out += ": ";
                json_value(out, item, indent, depth + 1);
            }
            if (indent >= 0) newline(depth);
            out.push_back('}');
            break;
        }
    }
}

Value convert(const nlohmann::ordered_json& j) {
    switch (j.type()) {
        case nlohmann::ordered_json::value_t::null: return Value::none();
        case nlohmann::ordered_json::value_t::boolean: return Value::boolean(j.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer: return Value::integer(j.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned:
            return Value::integer(static_cast<int64_t>(j.get<uint64_t>()));
        case nlohmann::ordered_json::value_t::number_float: return Value::number(j.get<double>());
        case nlohmann::ordered_json::value_t::string: return Value::string(j.get<std::string>());
        case nlohmann::ordered_json::value_t::array: {
            Array items;
            for (const auto& e : j) items.push_back(convert(e));
            return Value::list(std::move(items));
        }
        case nlohmann::ordered_json::value_t::object: {
            Object items;
            for (auto it = j.begin(); it != j.end(); ++it) items.emplace_back(it.key(), convert(it.value()));
            return Value::dict(std::move(items));
        }
        default: return Value::none();
    }
}

}  // namespace

std::string to_repr(const Value& v) {
    if (v.type == Value::Type::string) {
        // Python picks single quotes unless the text holds one and no double quote.
        const bool use_double = v.s.find('\'') != std::string::npos && v.s.find('"') == std::string::npos;
        const char q = use_double ? '"' : '\'';
        std::string out(1, q);
        for (char c : v.s) {
            if (c == q || c == '\\') out.push_back('\\');
            if (c == '\n') {
                out += "\\n";
            } else if (c == '\t') {
                out += "\\t";
            } else {
                out.push_back(c);
            }
        }
        out.push_back(q);
        return out;
    }
    return to_str(v);
}

std::string to_str(const Value& v) {
    switch (v.type) {
        case Value::Type::undefined: return "";
        case Value::Type::none: return "None";
        case Value::Type::boolean: return v.b ? "True" : "False";
        case Value::Type::integer: return std::to_string(v.i);
        case Value::Type::number: return format_double(v.d);
        case Value::Type::string: return v.s;
        case Value::Type::function: return "<function>";
        case Value::Type::array: {
            std::string out = "[";
            for (size_t k = 0; k < v.array->size(); ++k) out += (k ? ", " : "") + to_repr((*v.array)[k]);
            return out + "]";
        }
        case Value::Type::object: {
            std::string out = "{";
            bool first = true;
            for (const auto& [key, item] : *v.object) {
                out += (first ? "" : ", ") + to_repr(Value::string(key)) + ": " + to_repr(item);
                first = false;
            }
            return out + "}";
        }
    }
    return "";
}

std::string to_json(const Value& v, int indent) {
    std::string out;
    json_value(out, v, indent, 0);
    return out;
}

Value from_json(const std::string& text, const std::string& what) {
    try {
        return convert(nlohmann::ordered_json::parse(text));
    } catch (const nlohmann::json::exception& e) {
        throw TokenizerError(what + ": not valid JSON: " + e.what());
    }
}

bool equal(const Value& a, const Value& b) {
    if (a.is_numeric() && b.is_numeric()) return a.as_double() == b.as_double();
    if (a.type != b.type) return false;
    switch (a.type) {
        case Value::Type::undefined:
        case Value::Type::none: return true;
        case Value::Type::string: return a.s == b.s;
        case Value::Type::array:
            if (a.array->size() != b.array->size()) return false;
            for (size_t k = 0; k < a.array->size(); ++k) {
                if (!equal((*a.array)[k], (*b.array)[k])) return false;
            }
            return true;
        case Value::Type::object:
            if (a.object->size() != b.object->size()) return false;
            for (const auto& [key, item] : *a.object) {
                const Value* other = b.find(key);
                if (other == nullptr || !equal(item, *other)) return false;
            }
            return true;
        case Value::Type::function: return a.function == b.function;
        default: return false;
    }
}

int compare(const Value& a, const Value& b) {
    if (a.is_numeric() && b.is_numeric()) {
        const double x = a.as_double(), y = b.as_double();
        return x < y ? -1 : x > y ? 1 : 0;
    }
    if (a.is_string() && b.is_string()) return a.s < b.s ? -1 : a.s > b.s ? 1 : 0;
    if (a.type == Value::Type::array && b.type == Value::Type::array) {
        for (size_t k = 0; k < a.array->size() && k < b.array->size(); ++k) {
            if (int c = compare((*a.array)[k], (*b.array)[k]); c != 0) return c;
        }
        return a.array->size() < b.array->size() ? -1 : a.array->size() > b.array->size() ? 1 : 0;
    }
    throw TokenizerError("chat template: cannot compare " + type_name(a) + " with " + type_name(b));
}

std::string type_name(const Value& v) {
    switch (v.type) {
        case Value::Type::undefined: return "undefined";
        case Value::Type::none: return "none";
        case Value::Type::boolean: return "bool";
        case Value::Type::integer: return "int";
        case Value::Type::number: return "float";
        case Value::Type::string: return "string";
        case Value::Type::array: return "list";
        case Value::Type::object: return "dict";
        case Value::Type::function: return "function";
    }
    return "?";
}

}  // namespace tf::tokenizer::chat
