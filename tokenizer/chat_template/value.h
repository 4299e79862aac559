// The values a chat template computes with: Python-like (none, bool, int,
// float, str, list, dict, callables) plus Jinja's undefined. Lists and dicts
// are shared by reference, as in Python, so namespace() objects can be
// assigned through. Not thread-safe; each render builds its own values.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tf::tokenizer::chat {

struct Value;
using Array = std::vector<Value>;
using Object = std::vector<std::pair<std::string, Value>>;  // in insertion order, as Python dicts
using Kwargs = std::vector<std::pair<std::string, Value>>;
using Function = std::function<Value(std::vector<Value>& args, Kwargs& kwargs)>;

struct Value {
    enum class Type { undefined, none, boolean, integer, number, string, array, object, function };
    Type type = Type::undefined;
    bool b = false;
    int64_t i = 0;
    double d = 0;
    std::string s;
    std::shared_ptr<Array> array;
    std::shared_ptr<Object> object;
    std::shared_ptr<Function> function;

    static Value none() { return with(Type::none); }
    static Value boolean(bool v) { Value x = with(Type::boolean); x.b = v; return x; }
    static Value integer(int64_t v) { Value x = with(Type::integer); x.i = v; return x; }
    static Value number(double v) { Value x = with(Type::number); x.d = v; return x; }
    static Value string(std::string v) { Value x = with(Type::string); x.s = std::move(v); return x; }
    static Value list(Array items = {}) { Value x = with(Type::array); x.array = std::make_shared<Array>(std::move(items)); return x; }
    static Value dict(Object items = {}) { Value x = with(Type::object); x.object = std::make_shared<Object>(std::move(items)); return x; }
    static Value callable(Function f) { Value x = with(Type::function); x.function = std::make_shared<Function>(std::move(f)); return x; }

    bool is_undefined() const { return type == Type::undefined; }
    bool is_none() const { return type == Type::none; }
    bool is_string() const { return type == Type::string; }
    bool is_numeric() const { return type == Type::integer || type == Type::number || type == Type::boolean; }
    double as_double() const { return type == Type::number ? d : static_cast<double>(type == Type::boolean ? b : i); }

    bool truthy() const;
    // A dict entry, or nullptr.
    const Value* find(const std::string& key) const;
    void set(const std::string& key, Value v);

private:
    static Value with(Type t) { Value x; x.type = t; return x; }
};

// Python's str() of a value (what {{ }} prints); undefined prints nothing.
std::string to_str(const Value& v);
// Python's repr() (strings quoted), used inside printed lists and dicts.
std::string to_repr(const Value& v);
// json.dumps(v, ensure_ascii=False) with Python's separators; indent < 0: one line.
std::string to_json(const Value& v, int indent = -1);
// A value from JSON text; throws TokenizerError naming `what` when it does not parse.
Value from_json(const std::string& text, const std::string& what);

// Whether `container` (a list or dict) is `v` or can be reached from it. The
// two places a template mutates a container (namespace attributes, append)
// refuse a value that holds the container itself: such a cycle would never be
// freed (values share by reference counting) and could not be printed.
bool holds(const Value& v, const Value& container);

bool equal(const Value& a, const Value& b);
// <0, 0, >0; throws for types Python cannot order.
int compare(const Value& a, const Value& b);
std::string type_name(const Value& v);

}  // namespace tf::tokenizer::chat
