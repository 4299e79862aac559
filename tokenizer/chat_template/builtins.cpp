#include "tokenizer/chat_template/builtins.h"

#include <utf8proc.h>

#include <algorithm>
#include <cmath>

#include "tokenizer/error.h"
#include "tokenizer/utf8.h"

namespace tf::tokenizer::chat {

void runtime_error(int line, const std::string& what) {
    throw TokenizerError("chat template line " + std::to_string(line) + ": " + what);
}

namespace {

std::vector<std::string> characters(const std::string& s) {
    std::vector<std::string> out;
    size_t at = 0;
    while (at < s.size()) {
        const size_t start = at;
        utf8::next_code_point(s, at);
        out.push_back(s.substr(start, at - start));
    }
    return out;
}

bool in_set(char32_t c, const std::string* chars) {
    if (chars == nullptr) return utf8::is_whitespace(c);
    size_t at = 0;
    while (at < chars->size()) {
        if (utf8::next_code_point(*chars, at) == c) return true;
    }
    return false;
}

std::string strip(const std::string& s, bool left, bool right, const std::string* chars) {
    std::vector<std::string> cs = characters(s);
    size_t begin = 0, end = cs.size();
    const auto code = [&](size_t k) {
        size_t at = 0;
        return utf8::next_code_point(cs[k], at);
    };
    while (left && begin < end && in_set(code(begin), chars)) ++begin;
    while (right && end > begin && in_set(code(end - 1), chars)) --end;
    std::string out;
    for (size_t k = begin; k < end; ++k) out += cs[k];
    return out;
}

std::string map_case(const std::string& s, int mode) {  // 0 lower, 1 upper, 2 title, 3 capitalize
    std::string out;
    size_t at = 0;
    bool word_start = true, first = true;
    while (at < s.size()) {
        const char32_t c = utf8::next_code_point(s, at);
        bool upper = mode == 1 || (mode == 2 && word_start) || (mode == 3 && first);
        const auto cp = static_cast<utf8proc_int32_t>(c);
        utf8::append(out, static_cast<char32_t>(upper ? utf8proc_toupper(cp) : utf8proc_tolower(cp)));
        const utf8proc_category_t cat = utf8proc_category(cp);
        word_start = !(cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) &&
                     !(cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
        first = false;
    }
    return out;
}

std::vector<Value> split(const std::string& s, const Value* sep, int64_t max_split, int line) {
    std::vector<Value> out;
    if (sep == nullptr || sep->is_none()) {
        // Python: runs of whitespace separate, no empty strings.
        std::string current;
        bool in_word = false;
        size_t at = 0;
        while (at < s.size()) {
            const size_t start = at;
            const char32_t c = utf8::next_code_point(s, at);
            if (utf8::is_whitespace(c) && (max_split < 0 || static_cast<int64_t>(out.size()) < max_split)) {
                if (in_word) out.push_back(Value::string(current));
                current.clear();
                in_word = false;
            } else {
                if (!in_word && utf8::is_whitespace(c)) continue;
                current += s.substr(start, at - start);
                in_word = true;
            }
        }
        if (in_word) out.push_back(Value::string(strip(current, false, true, nullptr)));
        return out;
    }
    if (!sep->is_string() || sep->s.empty()) runtime_error(line, "split() needs a non-empty string separator");
    size_t at = 0;
    for (;;) {
        const size_t hit = s.find(sep->s, at);
        if (hit == std::string::npos || (max_split >= 0 && static_cast<int64_t>(out.size()) >= max_split)) break;
        out.push_back(Value::string(s.substr(at, hit - at)));
        at = hit + sep->s.size();
    }
    out.push_back(Value::string(s.substr(at)));
    return out;
}

std::string replace(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
    std::string out;
    size_t at = 0;
    int64_t done = 0;
    if (from.empty()) return s;
    for (;;) {
        const size_t hit = s.find(from, at);
        if (hit == std::string::npos || (count >= 0 && done >= count)) break;
        out += s.substr(at, hit - at) + to;
        at = hit + from.size();
        ++done;
    }
    return out + s.substr(at);
}

const Value* kwarg(const Kwargs& kwargs, const char* name) {
    for (const auto& [k, v] : kwargs) {
        if (k == name) return &v;
    }
    return nullptr;
}

// Positional argument k, else the keyword `name`, else null.
const Value* arg(const std::vector<Value>& args, size_t k, const Kwargs& kwargs, const char* name) {
    if (k < args.size()) return &args[k];
    return kwarg(kwargs, name);
}

Value attribute_of(const Value& v, const std::string& path) {
    Value current = v;
    size_t at = 0;
    while (at <= path.size()) {
        const size_t dot = path.find('.', at);
        const std::string part = path.substr(at, dot == std::string::npos ? std::string::npos : dot - at);
        current = subscript(current, Value::string(part));
        if (dot == std::string::npos) break;
        at = dot + 1;
    }
    return current;
}

int64_t python_index(int64_t k, size_t size) { return k < 0 ? k + static_cast<int64_t>(size) : k; }

}  // namespace

size_t length_of(const Value& v, int line) {
    switch (v.type) {
        case Value::Type::string: return characters(v.s).size();
        case Value::Type::array: return v.array->size();
        case Value::Type::object: return v.object->size();
        default: runtime_error(line, "length of a " + type_name(v) + " is undefined");
    }
}

std::vector<Value> iterate(const Value& v, int line) {
    switch (v.type) {
        case Value::Type::array: return *v.array;
        case Value::Type::object: {
            std::vector<Value> keys;
            for (const auto& [k, item] : *v.object) keys.push_back(Value::string(k));
            return keys;
        }
        case Value::Type::string: {
            std::vector<Value> out;
            for (auto& c : characters(v.s)) out.push_back(Value::string(c));
            return out;
        }
        case Value::Type::undefined: return {};
        default: runtime_error(line, "cannot iterate over a " + type_name(v));
    }
}

Value subscript(const Value& object, const Value& key) {
    if (object.type == Value::Type::object) {
        if (!key.is_string()) return Value();
        const Value* v = object.find(key.s);
        return v ? *v : Value();
    }
    if (key.type != Value::Type::integer) return Value();
    if (object.type == Value::Type::array) {
        const int64_t k = python_index(key.i, object.array->size());
        if (k < 0 || k >= static_cast<int64_t>(object.array->size())) return Value();
        return (*object.array)[static_cast<size_t>(k)];
    }
    if (object.is_string()) {
        std::vector<std::string> cs = characters(object.s);
        const int64_t k = python_index(key.i, cs.size());
        if (k < 0 || k >= static_cast<int64_t>(cs.size())) return Value();
        return Value::string(cs[static_cast<size_t>(k)]);
    }
    return Value();
}

Value slice_of(const Value& object, const Value& start_v, const Value& stop_v, const Value& step_v, int line) {
    const bool is_string = object.is_string();
    std::vector<std::string> cs;
    size_t size = 0;
    if (is_string) {
        cs = characters(object.s);
        size = cs.size();
    } else if (object.type == Value::Type::array) {
        size = object.array->size();
    } else {
        runtime_error(line, "cannot slice a " + type_name(object));
    }
    const int64_t n = static_cast<int64_t>(size);
    const int64_t step = step_v.is_none() ? 1 : step_v.i;
    if (step == 0) runtime_error(line, "slice step cannot be zero");
    const auto clamp = [&](const Value& v, int64_t fallback) {
        if (v.is_none()) return fallback;
        int64_t k = v.i < 0 ? v.i + n : v.i;
        if (step > 0) return std::clamp<int64_t>(k, 0, n);
        return std::clamp<int64_t>(k, -1, n - 1);
    };
    const int64_t start = clamp(start_v, step > 0 ? 0 : n - 1), stop = clamp(stop_v, step > 0 ? n : -1);
    Array items;
    std::string text;
    for (int64_t k = start; step > 0 ? k < stop : k > stop;) {
        if (is_string) {
            text += cs[static_cast<size_t>(k)];
        } else {
            items.push_back((*object.array)[static_cast<size_t>(k)]);
        }
        if (__builtin_add_overflow(k, step, &k)) break;  // a step as large as [::2**62] ends here
    }
    return is_string ? Value::string(text) : Value::list(std::move(items));
}

bool contains(const Value& container, const Value& item, int line) {
    switch (container.type) {
        case Value::Type::string:
            if (!item.is_string()) runtime_error(line, "'in <string>' needs a string on the left");
            return container.s.find(item.s) != std::string::npos;
        case Value::Type::array:
            return std::any_of(container.array->begin(), container.array->end(), [&](const Value& v) { return equal(v, item); });
        case Value::Type::object: return item.is_string() && container.find(item.s) != nullptr;
        case Value::Type::undefined: return false;
        default: runtime_error(line, "'in' needs a string, list or dict, got " + type_name(container));
    }
}

bool apply_test(const std::string& name, const Value& v, std::vector<Value>& args, int line) {
    using T = Value::Type;
    if (name == "defined") return !v.is_undefined();
    if (name == "undefined") return v.is_undefined();
    if (name == "none") return v.is_none();
    if (name == "string") return v.is_string();
    if (name == "number") return v.type == T::integer || v.type == T::number;
    if (name == "integer") return v.type == T::integer;
    if (name == "float") return v.type == T::number;
    if (name == "boolean") return v.type == T::boolean;
    if (name == "true") return v.type == T::boolean && v.b;
    if (name == "false") return v.type == T::boolean && !v.b;
    if (name == "mapping") return v.type == T::object;
    if (name == "sequence") return v.type == T::array || v.type == T::string;
    if (name == "iterable") return v.type == T::array || v.type == T::string || v.type == T::object;
    if (name == "callable") return v.type == T::function;
    if (name == "lower") return v.is_string() && map_case(v.s, 0) == v.s;
    if (name == "upper") return v.is_string() && map_case(v.s, 1) == v.s;
    if (name == "odd" || name == "even" || name == "divisibleby") {
        if (v.type != T::integer) runtime_error(line, "test '" + name + "' needs an integer");
        if (name == "odd") return v.i % 2 != 0;
        if (name == "even") return v.i % 2 == 0;
        if (args.empty() || args[0].type != T::integer || args[0].i == 0) runtime_error(line, "divisibleby needs a non-zero integer");
        return v.i % args[0].i == 0;
    }
    if (args.empty()) runtime_error(line, "test '" + name + "' is not supported or needs an argument");
    if (name == "eq" || name == "equalto" || name == "==") return equal(v, args[0]);
    if (name == "ne" || name == "!=") return !equal(v, args[0]);
    if (name == "lt") return compare(v, args[0]) < 0;
    if (name == "le") return compare(v, args[0]) <= 0;
    if (name == "gt") return compare(v, args[0]) > 0;
    if (name == "ge") return compare(v, args[0]) >= 0;
    if (name == "in") return contains(args[0], v, line);
    if (name == "sameas") return equal(v, args[0]) && v.type == args[0].type;
    runtime_error(line, "test '" + name + "' is not supported");
}

Value apply_filter(const std::string& name, const Value& v, std::vector<Value>& args, Kwargs& kwargs, int line) {
    using T = Value::Type;
    const auto need_string = [&]() -> const std::string& {
        if (!v.is_string()) runtime_error(line, "filter '" + name + "' needs a string, got " + type_name(v));
        return v.s;
    };
    const auto need_list = [&]() -> std::vector<Value> {
        if (v.type == T::array || v.type == T::object || v.type == T::string) return iterate(v, line);
        runtime_error(line, "filter '" + name + "' needs a list, got " + type_name(v));
    };
    if (name == "trim") {
        const Value* chars = arg(args, 0, kwargs, "chars");
        return Value::string(strip(to_str(v), true, true, chars && chars->is_string() ? &chars->s : nullptr));
    }
    if (name == "tojson") {
        const Value* indent = arg(args, 0, kwargs, "indent");
        return Value::string(to_json(v, indent && indent->type == T::integer ? static_cast<int>(indent->i) : -1));
    }
    if (name == "length" || name == "count") return Value::integer(static_cast<int64_t>(length_of(v, line)));
    if (name == "string") return Value::string(to_str(v));
    if (name == "safe") return v;
    if (name == "lower") return Value::string(map_case(to_str(v), 0));
    if (name == "upper") return Value::string(map_case(to_str(v), 1));
    if (name == "title") return Value::string(map_case(to_str(v), 2));
    if (name == "capitalize") return Value::string(map_case(to_str(v), 3));
    if (name == "first" || name == "last") {
        std::vector<Value> items = need_list();
        if (items.empty()) return Value();
        return name == "first" ? items.front() : items.back();
    }
    if (name == "list") return Value::list(need_list());
    if (name == "reverse") {
        if (v.is_string()) return slice_of(v, Value::none(), Value::none(), Value::integer(-1), line);
        std::vector<Value> items = need_list();
        std::reverse(items.begin(), items.end());
        return Value::list(std::move(items));
    }
    if (name == "join") {
        const Value* sep = arg(args, 0, kwargs, "d");
        const Value* attribute = kwarg(kwargs, "attribute");
        std::string out;
        bool first = true;
        for (const Value& item : need_list()) {
            if (!first && sep) out += to_str(*sep);
            first = false;
            out += to_str(attribute ? attribute_of(item, to_str(*attribute)) : item);
        }
        return Value::string(out);
    }
    if (name == "default" || name == "d") {
        const Value* fallback = arg(args, 0, kwargs, "default_value");
        const Value* boolean = arg(args, 1, kwargs, "boolean");
        const bool use_fallback = v.is_undefined() || (boolean && boolean->truthy() && !v.truthy());
        return use_fallback ? (fallback ? *fallback : Value::string("")) : v;
    }
    if (name == "items") {
        if (v.type != T::object) runtime_error(line, "filter 'items' needs a dict");
        Array pairs;
        for (const auto& [k, item] : *v.object) pairs.push_back(Value::list({Value::string(k), item}));
        return Value::list(std::move(pairs));
    }
    if (name == "replace") {
        if (args.size() < 2) runtime_error(line, "replace needs two arguments");
        return Value::string(replace(need_string(), to_str(args[0]), to_str(args[1]), args.size() > 2 ? args[2].i : -1));
    }
    if (name == "int") {
        if (v.type == Value::Type::integer) return v;
        if (v.is_numeric()) {
            const double d = v.as_double();
            if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) {
                runtime_error(line, "int: " + to_str(v) + " does not fit an integer");
            }
            return Value::integer(static_cast<int64_t>(d));
        }
        try {
            return Value::integer(std::stoll(to_str(v)));
        } catch (const std::exception&) {
            return args.empty() ? Value::integer(0) : args[0];
        }
    }
    if (name == "float") {
        if (v.is_numeric()) return Value::number(v.as_double());
        try {
            return Value::number(std::stod(to_str(v)));
        } catch (const std::exception&) {
            return Value::number(0);
        }
    }
    if (name == "abs") {
        if (v.type == T::integer) return Value::integer(v.i < 0 ? -v.i : v.i);
        if (v.is_numeric()) return Value::number(std::fabs(v.as_double()));
        runtime_error(line, "abs needs a number");
    }
    if (name == "round") {
        const Value* precision = arg(args, 0, kwargs, "precision");
        const double scale = std::pow(10.0, precision ? precision->as_double() : 0.0);
        return Value::number(std::round(v.as_double() * scale) / scale);
    }
    if (name == "indent") {
        const Value* width_v = arg(args, 0, kwargs, "width");
        const Value* first_v = arg(args, 1, kwargs, "first");
        const std::string pad = width_v && width_v->is_string() ? width_v->s
                                                                : std::string(width_v ? static_cast<size_t>(width_v->i) : 4, ' ');
        const std::string& s = need_string();
        std::string out;
        for (size_t k = 0; k < s.size(); ++k) {
            out.push_back(s[k]);
            if (s[k] == '\n' && k + 1 < s.size() && s[k + 1] != '\n') out += pad;
        }
        return Value::string((first_v && first_v->truthy() ? pad : "") + out);
    }
    if (name == "selectattr" || name == "rejectattr" || name == "select" || name == "reject") {
        const bool by_attribute = name.back() == 'r';
        const bool keep_when = name[0] == 's';
        size_t next = 0;
        std::string attribute;
        if (by_attribute) {
            if (args.empty()) runtime_error(line, name + " needs an attribute name");
            attribute = to_str(args[next++]);
        }
        std::string test = next < args.size() ? to_str(args[next++]) : std::string();
        std::vector<Value> test_args(args.begin() + static_cast<long>(std::min(next, args.size())), args.end());
        Array kept;
        for (const Value& item : need_list()) {
            const Value subject = by_attribute ? attribute_of(item, attribute) : item;
            const bool pass = test.empty() ? subject.truthy() : apply_test(test, subject, test_args, line);
            if (pass == keep_when) kept.push_back(item);
        }
        return Value::list(std::move(kept));
    }
    if (name == "map") {
        Array out;
        const Value* attribute = kwarg(kwargs, "attribute");
        for (const Value& item : need_list()) {
            if (attribute) {
                Value got = attribute_of(item, to_str(*attribute));
                const Value* fallback = kwarg(kwargs, "default");
                out.push_back(got.is_undefined() && fallback ? *fallback : got);
            } else {
                if (args.empty()) runtime_error(line, "map needs a filter name or attribute=");
                std::vector<Value> rest(args.begin() + 1, args.end());
                Kwargs none;
                out.push_back(apply_filter(to_str(args[0]), item, rest, none, line));
            }
        }
        return Value::list(std::move(out));
    }
    if (name == "unique") {
        Array out;
        for (const Value& item : need_list()) {
            if (std::none_of(out.begin(), out.end(), [&](const Value& o) { return equal(o, item); })) out.push_back(item);
        }
        return Value::list(std::move(out));
    }
    if (name == "sort") {
        std::vector<Value> items = need_list();
        const Value* reverse = kwarg(kwargs, "reverse");
        const Value* attribute = kwarg(kwargs, "attribute");
        std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
            const Value x = attribute ? attribute_of(a, to_str(*attribute)) : a;
            const Value y = attribute ? attribute_of(b, to_str(*attribute)) : b;
            return reverse && reverse->truthy() ? compare(y, x) < 0 : compare(x, y) < 0;
        });
        return Value::list(std::move(items));
    }
    if (name == "sum") {
        double total = 0;
        bool all_int = true;
        for (const Value& item : need_list()) {
            const Value* attribute = kwarg(kwargs, "attribute");
            const Value x = attribute ? attribute_of(item, to_str(*attribute)) : item;
            all_int = all_int && x.type == T::integer;
            total += x.as_double();
        }
        return all_int ? Value::integer(static_cast<int64_t>(total)) : Value::number(total);
    }
    runtime_error(line, "filter '" + name + "' is not supported");
}

std::optional<Value> call_method(const Value& object, const std::string& name, std::vector<Value>& args, Kwargs& kwargs,
                                 int line) {
    using T = Value::Type;
    if (object.is_string()) {
        const std::string& s = object.s;
        const auto text_arg = [&](size_t k) -> const std::string* {
            return k < args.size() && args[k].is_string() ? &args[k].s : nullptr;
        };
        if (name == "startswith" || name == "endswith") {
            std::vector<std::string> options;
            if (!args.empty() && args[0].type == T::array) {
                for (const Value& o : *args[0].array) options.push_back(to_str(o));
            } else if (const std::string* p = text_arg(0)) {
                options.push_back(*p);
            } else {
                runtime_error(line, name + "() needs a string");
            }
            for (const std::string& o : options) {
                const bool hit = name == "startswith" ? s.compare(0, o.size(), o) == 0
                                                      : s.size() >= o.size() && s.compare(s.size() - o.size(), o.size(), o) == 0;
                if (hit) return Value::boolean(true);
            }
            return Value::boolean(false);
        }
        if (name == "strip") return Value::string(strip(s, true, true, text_arg(0)));
        if (name == "lstrip") return Value::string(strip(s, true, false, text_arg(0)));
        if (name == "rstrip") return Value::string(strip(s, false, true, text_arg(0)));
        if (name == "split") {
            const Value* sep = arg(args, 0, kwargs, "sep");
            const Value* max_split = arg(args, 1, kwargs, "maxsplit");
            return Value::list(split(s, sep, max_split ? max_split->i : -1, line));
        }
        if (name == "upper") return Value::string(map_case(s, 1));
        if (name == "lower") return Value::string(map_case(s, 0));
        if (name == "title") return Value::string(map_case(s, 2));
        if (name == "capitalize") return Value::string(map_case(s, 3));
        if (name == "replace") {
            if (args.size() < 2) runtime_error(line, "replace() needs two arguments");
            return Value::string(replace(s, to_str(args[0]), to_str(args[1]), args.size() > 2 ? args[2].i : -1));
        }
        if (name == "find") {
            const size_t hit = s.find(args.empty() ? std::string() : to_str(args[0]));
            return Value::integer(hit == std::string::npos ? -1 : static_cast<int64_t>(characters(s.substr(0, hit)).size()));
        }
        if (name == "count") {
            const std::string needle = args.empty() ? std::string() : to_str(args[0]);
            int64_t n = 0;
            for (size_t at = 0; !needle.empty() && (at = s.find(needle, at)) != std::string::npos; at += needle.size()) ++n;
            return Value::integer(n);
        }
        if (name == "join") {
            if (args.empty()) runtime_error(line, "join() needs a list");
            std::string out;
            bool first = true;
            for (const Value& item : iterate(args[0], line)) {
                if (!first) out += s;
                first = false;
                out += to_str(item);
            }
            return Value::string(out);
        }
        if (name == "isdigit" || name == "isspace" || name == "isalpha") {
            if (s.empty()) return Value::boolean(false);
            size_t at = 0;
            while (at < s.size()) {
                const auto c = static_cast<utf8proc_int32_t>(utf8::next_code_point(s, at));
                const utf8proc_category_t cat = utf8proc_category(c);
                const bool ok = name == "isdigit" ? cat == UTF8PROC_CATEGORY_ND
                                : name == "isspace" ? utf8::is_whitespace(static_cast<char32_t>(c))
                                                    : (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO);
                if (!ok) return Value::boolean(false);
            }
            return Value::boolean(true);
        }
        return std::nullopt;
    }
    if (object.type == T::object) {
        if (name == "get") {
            if (args.empty() || !args[0].is_string()) runtime_error(line, "get() needs a string key");
            const Value* v = object.find(args[0].s);
            return v ? *v : (args.size() > 1 ? args[1] : Value::none());
        }
        if (name == "items") return apply_filter("items", object, args, kwargs, line);
        if (name == "keys") return Value::list(iterate(object, line));
        if (name == "values") {
            Array out;
            for (const auto& [k, v] : *object.object) out.push_back(v);
            return Value::list(std::move(out));
        }
        return std::nullopt;
    }
    if (object.type == T::array) {
        if (name == "append") {
            if (args.size() != 1) runtime_error(line, "append() needs one argument");
            if (holds(args[0], object)) runtime_error(line, "append(): cannot put a list inside itself");
            object.array->push_back(args[0]);
            return Value::none();
        }
        if (name == "index") {
            for (size_t k = 0; k < object.array->size(); ++k) {
                if (!args.empty() && equal((*object.array)[k], args[0])) return Value::integer(static_cast<int64_t>(k));
            }
            runtime_error(line, "index(): the value is not in the list");
        }
        return std::nullopt;
    }
    return std::nullopt;
}

}  // namespace tf::tokenizer::chat
