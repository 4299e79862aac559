// Filters, tests and methods of the chat-template language (internal).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tokenizer/chat_template/value.h"

namespace tf::tokenizer::chat {

Value apply_filter(const std::string& name, const Value& subject, std::vector<Value>& args, Kwargs& kwargs, int line);
bool apply_test(const std::string& name, const Value& subject, std::vector<Value>& args, int line);
// A method of a str, dict or list (`text.startswith('x')`, `ns.get('k')`,
// `items.append(x)`); nullopt when the type has no such method.
std::optional<Value> call_method(const Value& object, const std::string& name, std::vector<Value>& args, Kwargs& kwargs,
                                 int line);

// Python semantics shared with the evaluator.
size_t length_of(const Value& v, int line);
Value subscript(const Value& object, const Value& key);
Value slice_of(const Value& object, const Value& start, const Value& stop, const Value& step, int line);
bool contains(const Value& container, const Value& item, int line);
std::vector<Value> iterate(const Value& v, int line);  // list items, dict keys, string characters

[[noreturn]] void runtime_error(int line, const std::string& what);

}  // namespace tf::tokenizer::chat
