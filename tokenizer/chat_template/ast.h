// The syntax tree of a chat template (the Jinja subset chat templates use)
// and the parser that builds it. Internal to tokenizer/chat_template.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/chat_template/value.h"

namespace tf::tokenizer::chat {

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;

struct Expr {
    enum class Kind { literal, name, list, dict, tuple, attribute, index, slice, call, filter, test, unary, binary, ternary };
    Kind kind = Kind::literal;
    int line = 0;
    Value literal;
    std::string name;                                // name, attribute, filter, test, operator
    std::vector<ExprPtr> kids;                       // operands; call: callee then args; dict: key, value pairs
    std::vector<std::pair<std::string, ExprPtr>> kwargs;
    bool negate = false;                             // test: "is not"
};

struct Node;
using NodePtr = std::shared_ptr<const Node>;
using Body = std::vector<NodePtr>;

struct Node {
    enum class Kind { text, output, if_chain, for_loop, set, set_block, macro, break_loop, continue_loop };
    Kind kind = Kind::text;
    int line = 0;
    std::string text;                                // text; macro name
    ExprPtr expr;                                    // output; for: iterable; set: value
    ExprPtr target;                                  // set: a name or an attribute (ns.x)
    std::vector<std::string> names;                  // for/set: the unpacked names; set_block: the name
    ExprPtr condition;                               // for: the "if" filter
    std::vector<std::pair<ExprPtr, Body>> branches;  // if/elif/else (else: null condition)
    Body body, else_body;                            // for, macro, set_block
    std::vector<std::pair<std::string, ExprPtr>> params;  // macro parameters with defaults (null: none)
};

// Parses a template; throws TokenizerError ("chat template line N: ...") for
// syntax errors and constructs outside the supported subset.
Body parse_template(const std::string& source);

}  // namespace tf::tokenizer::chat
