#include "tokenizer/chat_template/template.h"

#include <algorithm>
#include <cmath>
#include <ctime>

#include "tokenizer/chat_template/builtins.h"
#include "tokenizer/error.h"

namespace tf::tokenizer::chat {

namespace {

struct Scope {
    Object vars;
    Scope* parent = nullptr;

    Value* lookup(const std::string& name) {
        for (Scope* s = this; s != nullptr; s = s->parent) {
            for (auto& [k, v] : s->vars) {
                if (k == name) return &v;
            }
        }
        return nullptr;
    }
    void assign(const std::string& name, Value v) {
        for (auto& [k, old] : vars) {
            if (k == name) {
                old = std::move(v);
                return;
            }
        }
        vars.emplace_back(name, std::move(v));
    }
};

enum class Flow { normal, break_loop, continue_loop };

// Limits on what one render may do. A chat template runs on every chat
// request, so one that recurses or loops without end must fail that request
// with a message rather than exhaust the stack or hold a thread; real
// templates stay orders of magnitude below each (fuzz/regressions/chat_template/).
constexpr int kMaxMacroDepth = 100;           // macros calling macros
constexpr int64_t kMaxSteps = int64_t{1} << 17;  // nodes executed and loop turns (tens a message in real templates)
constexpr size_t kMaxStringBytes = size_t{1} << 24;  // one string value (16 MiB)

// Integers are 64-bit here (Python's are unbounded): a result that does not
// fit is an error instead of undefined behaviour.
// `op` is one of the __builtin_*_overflow functions. The result is read only
// after the builtin has written it: passing both as arguments of one call
// would leave their order to the compiler (g++ read the result first).
template <class Op>
int64_t checked(Op op, int64_t a, int64_t b, int line) {
    int64_t result = 0;
    if (op(a, b, &result)) runtime_error(line, "integer overflow");
    return result;
}
bool add_overflows(int64_t a, int64_t b, int64_t* r) { return __builtin_add_overflow(a, b, r); }
bool sub_overflows(int64_t a, int64_t b, int64_t* r) { return __builtin_sub_overflow(a, b, r); }
bool mul_overflows(int64_t a, int64_t b, int64_t* r) { return __builtin_mul_overflow(a, b, r); }

int64_t to_integer(double value, int line) {
    // 2^63 is exactly representable; anything at or beyond it (or NaN) is not an int64.
    if (!(value >= -9223372036854775808.0 && value < 9223372036854775808.0)) {
        runtime_error(line, "number " + std::to_string(value) + " does not fit an integer");
    }
    return static_cast<int64_t>(value);
}

class Renderer {
public:
    explicit Renderer(Scope& globals) : globals_(globals) {}

    Flow exec(const Body& body, Scope& scope, std::string& out) {
        for (const NodePtr& n : body) {
            Flow f = exec(*n, scope, out);
            if (f != Flow::normal) return f;
        }
        return Flow::normal;
    }

private:
    void step(int line) {
        if (++steps_ > kMaxSteps) runtime_error(line, "rendering takes more than " + std::to_string(kMaxSteps) + " steps");
    }

    Flow exec(const Node& n, Scope& scope, std::string& out) {
        step(n.line);
        if (out.size() > kMaxStringBytes) runtime_error(n.line, "the rendered text exceeds 16 MiB");
        switch (n.kind) {
            case Node::Kind::text: out += n.text; return Flow::normal;
            case Node::Kind::output: out += to_str(eval(*n.expr, scope)); return Flow::normal;
            case Node::Kind::if_chain:
                for (const auto& [condition, body] : n.branches) {
                    if (!condition || eval(*condition, scope).truthy()) return exec(body, scope, out);
                }
                return Flow::normal;
            case Node::Kind::for_loop: return exec_for(n, scope, out);
            case Node::Kind::set: {
                Value v = eval(*n.expr, scope);
                if (n.target) {
                    Value* object = scope.lookup(n.target->kids[0]->name);
                    if (object == nullptr || object->type != Value::Type::object) {
                        runtime_error(n.line, "cannot assign '" + n.target->name + "' on '" + n.target->kids[0]->name +
                                                  "', which is not a namespace");
                    }
                    if (holds(v, *object)) {
                        runtime_error(n.line, "cannot store '" + n.target->kids[0]->name + "' inside itself");
                    }
                    object->set(n.target->name, std::move(v));
                } else if (n.names.size() == 1) {
                    scope.assign(n.names[0], std::move(v));
                } else {
                    std::vector<Value> items = iterate(v, n.line);
                    if (items.size() != n.names.size()) runtime_error(n.line, "cannot unpack into " + std::to_string(n.names.size()) + " names");
                    for (size_t k = 0; k < items.size(); ++k) scope.assign(n.names[k], items[k]);
                }
                return Flow::normal;
            }
            case Node::Kind::set_block: {
                std::string captured;
                exec(n.body, scope, captured);
                scope.assign(n.names[0], Value::string(std::move(captured)));
                return Flow::normal;
            }
            case Node::Kind::macro: {
                const Node* macro = &n;
                scope.assign(n.text, Value::callable([this, macro](std::vector<Value>& args, Kwargs& kwargs) {
                    if (macro_depth_ >= kMaxMacroDepth) {
                        runtime_error(macro->line, "macro calls nested more than " + std::to_string(kMaxMacroDepth) + " deep");
                    }
                    ++macro_depth_;
                    struct Leave {
                        int& depth;
                        ~Leave() { --depth; }
                    } leave{macro_depth_};
                    Scope local{{}, &globals_};
                    for (size_t k = 0; k < macro->params.size(); ++k) {
                        // (plain references: clang before 16 cannot capture structured bindings)
                        const std::string& name = macro->params[k].first;
                        const ExprPtr& fallback = macro->params[k].second;
                        Value v;
                        if (k < args.size()) {
                            v = args[k];
                        } else if (auto it = std::find_if(kwargs.begin(), kwargs.end(), [&](auto& kw) { return kw.first == name; });
                                   it != kwargs.end()) {
                            v = it->second;
                        } else if (fallback) {
                            v = eval(*fallback, local);
                        }
                        local.assign(name, v);
                    }
                    std::string text;
                    exec(macro->body, local, text);
                    return Value::string(std::move(text));
                }));
                return Flow::normal;
            }
            case Node::Kind::break_loop: return Flow::break_loop;
            case Node::Kind::continue_loop: return Flow::continue_loop;
        }
        return Flow::normal;
    }

    Flow exec_for(const Node& n, Scope& scope, std::string& out) {
        std::vector<Value> all = iterate(eval(*n.expr, scope), n.line);
        std::vector<Value> items;
        Scope probe{{}, &scope};
        for (Value& v : all) {
            if (n.condition) {
                bind(n, probe, v);
                if (!eval(*n.condition, probe).truthy()) continue;
            }
            items.push_back(std::move(v));
        }
        if (items.empty()) {
            Scope inner{{}, &scope};
            exec(n.else_body, inner, out);
            return Flow::normal;
        }
        const int64_t length = static_cast<int64_t>(items.size());
        for (int64_t k = 0; k < length; ++k) {
            step(n.line);
            Scope inner{{}, &scope};
            bind(n, inner, items[static_cast<size_t>(k)]);
            Object loop = {{"index", Value::integer(k + 1)},
                           {"index0", Value::integer(k)},
                           {"revindex", Value::integer(length - k)},
                           {"revindex0", Value::integer(length - k - 1)},
                           {"first", Value::boolean(k == 0)},
                           {"last", Value::boolean(k == length - 1)},
                           {"length", Value::integer(length)},
                           {"previtem", k > 0 ? items[static_cast<size_t>(k - 1)] : Value()},
                           {"nextitem", k + 1 < length ? items[static_cast<size_t>(k + 1)] : Value()}};
            loop.emplace_back("cycle", Value::callable([k](std::vector<Value>& args, Kwargs&) {
                return args.empty() ? Value() : args[static_cast<size_t>(k) % args.size()];
            }));
            inner.assign("loop", Value::dict(std::move(loop)));
            if (exec(n.body, inner, out) == Flow::break_loop) break;
        }
        return Flow::normal;
    }

    void bind(const Node& n, Scope& scope, const Value& item) {
        if (n.names.size() == 1) {
            scope.assign(n.names[0], item);
            return;
        }
        std::vector<Value> parts = iterate(item, n.line);
        if (parts.size() != n.names.size()) runtime_error(n.line, "cannot unpack into " + std::to_string(n.names.size()) + " loop variables");
        for (size_t k = 0; k < parts.size(); ++k) scope.assign(n.names[k], parts[k]);
    }

    Value eval(const Expr& e, Scope& scope) {
        switch (e.kind) {
            case Expr::Kind::literal: return e.literal;
            case Expr::Kind::name: {
                Value* v = scope.lookup(e.name);
                return v ? *v : Value();
            }
            case Expr::Kind::list:
            case Expr::Kind::tuple: {
                Array items;
                for (const ExprPtr& k : e.kids) items.push_back(eval(*k, scope));
                return Value::list(std::move(items));
            }
            case Expr::Kind::dict: {
                Value d = Value::dict();
                for (size_t k = 0; k + 1 < e.kids.size(); k += 2) {
                    Value key = eval(*e.kids[k], scope);
                    if (!key.is_string()) runtime_error(e.line, "dict keys must be strings here");
                    d.set(key.s, eval(*e.kids[k + 1], scope));
                }
                return d;
            }
            case Expr::Kind::attribute: {
                Value object = eval(*e.kids[0], scope);
                if (const Value* v = object.find(e.name)) return *v;
                return Value();
            }
            case Expr::Kind::index: return subscript(eval(*e.kids[0], scope), eval(*e.kids[1], scope));
            case Expr::Kind::slice: {
                const auto part = [&](size_t k) { return e.kids[k] ? eval(*e.kids[k], scope) : Value::none(); };
                return slice_of(eval(*e.kids[0], scope), part(1), part(2), part(3), e.line);
            }
            case Expr::Kind::call: return eval_call(e, scope);
            case Expr::Kind::filter: {
                Value subject = eval(*e.kids[0], scope);
                std::vector<Value> args;
                Kwargs kwargs;
                arguments(e, 1, scope, args, kwargs);
                return apply_filter(e.name, subject, args, kwargs, e.line);
            }
            case Expr::Kind::test: {
                Value subject = eval(*e.kids[0], scope);
                std::vector<Value> args;
                Kwargs kwargs;
                arguments(e, 1, scope, args, kwargs);
                return Value::boolean(apply_test(e.name, subject, args, e.line) != e.negate);
            }
            case Expr::Kind::unary: {
                Value v = eval(*e.kids[0], scope);
                if (e.name == "not") return Value::boolean(!v.truthy());
                if (v.type == Value::Type::integer) {
                    return Value::integer(e.name == "-" ? checked(sub_overflows, 0, v.i, e.line) : v.i);
                }
                if (v.is_numeric()) return Value::number(e.name == "-" ? -v.as_double() : v.as_double());
                runtime_error(e.line, "unary " + e.name + " needs a number, got " + type_name(v));
            }
            case Expr::Kind::ternary:
                return eval(*e.kids[0], scope).truthy() ? eval(*e.kids[1], scope) : eval(*e.kids[2], scope);
            case Expr::Kind::binary: return eval_binary(e, scope);
        }
        return Value();
    }

    void arguments(const Expr& e, size_t first, Scope& scope, std::vector<Value>& args, Kwargs& kwargs) {
        for (size_t k = first; k < e.kids.size(); ++k) args.push_back(eval(*e.kids[k], scope));
        for (const auto& [key, value] : e.kwargs) kwargs.emplace_back(key, eval(*value, scope));
    }

    Value eval_call(const Expr& e, Scope& scope) {
        std::vector<Value> args;
        Kwargs kwargs;
        arguments(e, 1, scope, args, kwargs);
        const Expr& callee = *e.kids[0];
        if (callee.kind == Expr::Kind::attribute) {
            Value object = eval(*callee.kids[0], scope);
            const Value* member = object.find(callee.name);
            if (member != nullptr && member->type == Value::Type::function) return (*member->function)(args, kwargs);
            if (auto result = call_method(object, callee.name, args, kwargs, e.line)) return *result;
            runtime_error(e.line, type_name(object) + " has no method '" + callee.name + "'");
        }
        Value f = eval(callee, scope);
        if (f.type != Value::Type::function) {
            runtime_error(e.line, "'" + (callee.kind == Expr::Kind::name ? callee.name : std::string("expression")) +
                                      "' is not a function (" + type_name(f) + ")");
        }
        return (*f.function)(args, kwargs);
    }

    Value eval_binary(const Expr& e, Scope& scope) {
        const std::string& op = e.name;
        Value a = eval(*e.kids[0], scope);
        if (op == "and") return a.truthy() ? eval(*e.kids[1], scope) : a;
        if (op == "or") return a.truthy() ? a : eval(*e.kids[1], scope);
        Value b = eval(*e.kids[1], scope);
        if (op == "~") return Value::string(to_str(a) + to_str(b));
        if (op == "==") return Value::boolean(equal(a, b));
        if (op == "!=") return Value::boolean(!equal(a, b));
        if (op == "<") return Value::boolean(compare(a, b) < 0);
        if (op == ">") return Value::boolean(compare(a, b) > 0);
        if (op == "<=") return Value::boolean(compare(a, b) <= 0);
        if (op == ">=") return Value::boolean(compare(a, b) >= 0);
        if (op == "in") return Value::boolean(contains(b, a, e.line));
        if (op == "not in") return Value::boolean(!contains(b, a, e.line));
        if (op == "+") {
            if (a.is_string() && b.is_string()) return Value::string(a.s + b.s);
            if (a.type == Value::Type::array && b.type == Value::Type::array) {
                Array items = *a.array;
                items.insert(items.end(), b.array->begin(), b.array->end());
                return Value::list(std::move(items));
            }
        }
        if (op == "*" && a.is_string() && b.type == Value::Type::integer) {
            if (b.i > 0 && a.s.size() > kMaxStringBytes / static_cast<uint64_t>(b.i)) {
                runtime_error(e.line, "a string repeated " + std::to_string(b.i) + " times exceeds 16 MiB");
            }
            std::string out;
            for (int64_t k = 0; k < b.i; ++k) out += a.s;
            return Value::string(out);
        }
        if (!a.is_numeric() || !b.is_numeric()) {
            runtime_error(e.line, "cannot apply '" + op + "' to " + type_name(a) + " and " + type_name(b));
        }
        const bool ints = a.type != Value::Type::number && b.type != Value::Type::number;
        const double x = a.as_double(), y = b.as_double();
        if (op == "+") return ints ? Value::integer(checked(add_overflows, a.i, b.i, e.line)) : Value::number(x + y);
        if (op == "-") return ints ? Value::integer(checked(sub_overflows, a.i, b.i, e.line)) : Value::number(x - y);
        if (op == "*") return ints ? Value::integer(checked(mul_overflows, a.i, b.i, e.line)) : Value::number(x * y);
        if (op == "**") return ints && b.i >= 0 ? Value::integer(to_integer(std::pow(x, y), e.line)) : Value::number(std::pow(x, y));
        if (y == 0) runtime_error(e.line, "division by zero");
        if (op == "/") return Value::number(x / y);
        if (op == "//") return ints ? Value::integer(to_integer(std::floor(x / y), e.line)) : Value::number(std::floor(x / y));
        // Python's sign rule (the result takes the divisor's sign); x % -1 is
        // 0, and computing it would overflow for the most negative x.
        if (op == "%") return ints ? Value::integer(b.i == -1 ? 0 : ((a.i % b.i) + b.i) % b.i) : Value::number(x - y * std::floor(x / y));
        runtime_error(e.line, "unknown operator '" + op + "'");
    }

    Scope& globals_;
    int macro_depth_ = 0;
    int64_t steps_ = 0;
};

Value globals_function(const char* name) {
    const std::string n = name;
    if (n == "raise_exception") {
        return Value::callable([](std::vector<Value>& args, Kwargs&) -> Value {
            throw TokenizerError("chat template raised an exception: " + (args.empty() ? std::string() : to_str(args[0])));
        });
    }
    if (n == "namespace") {
        return Value::callable([](std::vector<Value>& args, Kwargs& kwargs) {
            Value ns = Value::dict();
            for (const Value& a : args) {
                if (a.type == Value::Type::object) {
                    for (const auto& [k, v] : *a.object) ns.set(k, v);
                }
            }
            for (const auto& [k, v] : kwargs) ns.set(k, v);
            return ns;
        });
    }
    if (n == "range") {
        return Value::callable([](std::vector<Value>& args, Kwargs&) {
            int64_t start = 0, stop = 0, step = 1;
            if (args.size() == 1) {
                stop = args[0].i;
            } else if (args.size() >= 2) {
                start = args[0].i;
                stop = args[1].i;
                if (args.size() > 2) step = args[2].i;
            }
            if (step == 0) throw TokenizerError("chat template: range() step must not be zero");
            Array items;
            for (int64_t k = start; step > 0 ? k < stop : k > stop;) {
                items.push_back(Value::integer(k));
                if (items.size() > 1000000) throw TokenizerError("chat template: range() is too long");
                if (__builtin_add_overflow(k, step, &k)) break;  // the next value lies past any stop
            }
            return Value::list(std::move(items));
        });
    }
    // strftime_now(format): the local time, as transformers provides it.
    return Value::callable([](std::vector<Value>& args, Kwargs&) {
        const std::time_t now = std::time(nullptr);
        std::tm local{};
        localtime_r(&now, &local);
        char buf[256];
        const std::string format = args.empty() ? std::string("%Y-%m-%d") : to_str(args[0]);
        const size_t n = std::strftime(buf, sizeof buf, format.c_str(), &local);
        return Value::string(std::string(buf, n));
    });
}

Value json_or_string(const std::string& text, const std::string& what) {
    if (text.empty()) return Value::dict();
    return from_json(text, what);
}

}  // namespace

Template::Template(const std::string& source) : source_(source), body_(parse_template(source)) {}

namespace {

bool expr_reads(const ExprPtr& expr, const std::string& name) {
    if (!expr) return false;
    if (expr->kind == Expr::Kind::name && expr->name == name) return true;
    for (const ExprPtr& kid : expr->kids) {
        if (expr_reads(kid, name)) return true;
    }
    for (const auto& kwarg : expr->kwargs) {
        if (expr_reads(kwarg.second, name)) return true;
    }
    return false;
}

bool body_reads(const Body& body, const std::string& name) {
    for (const NodePtr& node : body) {
        if (expr_reads(node->expr, name) || expr_reads(node->condition, name)) return true;
        for (const auto& [condition, branch] : node->branches) {
            if (expr_reads(condition, name) || body_reads(branch, name)) return true;
        }
        if (body_reads(node->body, name) || body_reads(node->else_body, name)) return true;
        for (const auto& param : node->params) {
            if (expr_reads(param.second, name)) return true;
        }
    }
    return false;
}

}  // namespace

bool Template::reads_variable(const std::string& name) const { return body_reads(body_, name); }

std::string Template::render_with(const Object& variables) const {
    Scope globals;
    for (const char* name : {"raise_exception", "namespace", "range", "strftime_now"}) {
        globals.assign(name, globals_function(name));
    }
    for (const auto& [k, v] : variables) globals.assign(k, v);
    Renderer renderer(globals);
    std::string out;
    renderer.exec(body_, globals, out);
    return out;
}

Value messages_value(const std::vector<ChatMessage>& messages) {
    Array list;
    for (size_t m = 0; m < messages.size(); ++m) {
        const ChatMessage& msg = messages[m];
        Value v = Value::dict();
        v.set("role", Value::string(msg.role));
        v.set("content", msg.content ? Value::string(*msg.content) : Value::none());
        if (msg.reasoning_content) v.set("reasoning_content", Value::string(*msg.reasoning_content));
        if (msg.name) v.set("name", Value::string(*msg.name));
        if (msg.tool_call_id) v.set("tool_call_id", Value::string(*msg.tool_call_id));
        if (!msg.tool_calls.empty()) {
            Array calls;
            for (size_t c = 0; c < msg.tool_calls.size(); ++c) {
                const ToolCall& call = msg.tool_calls[c];
                Value function = Value::dict();
                function.set("name", Value::string(call.name));
                function.set("arguments", json_or_string(call.arguments_json, "messages[" + std::to_string(m) + "].tool_calls[" +
                                                                                  std::to_string(c) + "].arguments"));
                Value entry = Value::dict();
                if (!call.id.empty()) entry.set("id", Value::string(call.id));
                entry.set("type", Value::string("function"));
                entry.set("function", function);
                calls.push_back(entry);
            }
            v.set("tool_calls", Value::list(std::move(calls)));
        }
        list.push_back(v);
    }
    return Value::list(std::move(list));
}

std::string Template::render(const ChatRequest& request,
                             const std::vector<std::pair<std::string, std::string>>& special_tokens) const {
    Object variables;
    for (const auto& [name, text] : special_tokens) variables.emplace_back(name, Value::string(text));
    variables.emplace_back("messages", messages_value(request.messages));
    variables.emplace_back("add_generation_prompt", Value::boolean(request.add_generation_prompt));
    if (!request.tools_json.empty()) {
        Array tools;
        for (size_t k = 0; k < request.tools_json.size(); ++k) {
            tools.push_back(from_json(request.tools_json[k], "tools[" + std::to_string(k) + "]"));
        }
        variables.emplace_back("tools", Value::list(std::move(tools)));
    } else {
        variables.emplace_back("tools", Value::none());
    }
    for (const auto& variable : request.variables_json) {
        const std::string& name = variable.first;
        Value v = from_json(variable.second, "chat variable '" + name + "'");
        auto it = std::find_if(variables.begin(), variables.end(), [&](const auto& kv) { return kv.first == name; });
        if (it != variables.end()) {
            it->second = v;
        } else {
            variables.emplace_back(name, v);
        }
    }
    return render_with(variables);
}

}  // namespace tf::tokenizer::chat
