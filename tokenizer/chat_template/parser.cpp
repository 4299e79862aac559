// Recursive-descent parsing of the lexer's tokens (lexer.h), following the
// operator precedence of jinja2/parser.py.
#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string>

#include "tokenizer/chat_template/ast.h"
#include "tokenizer/chat_template/lexer.h"
#include "tokenizer/error.h"

namespace tf::tokenizer::chat {

namespace {

// Deepest nesting of parentheses, brackets, unary operators or blocks taken.
// Real templates nest a handful of levels; without a limit a template of
// 20,000 "(" exhausts the stack (fuzz/regressions/chat_template/).
constexpr int kMaxNesting = 200;

class NestingGuard {
public:
    NestingGuard(int& depth, int line) : depth_(depth) {
        if (++depth_ > kMaxNesting) fail(line, "nested more than " + std::to_string(kMaxNesting) + " levels deep");
    }
    ~NestingGuard() { --depth_; }
    NestingGuard(const NestingGuard&) = delete;
    NestingGuard& operator=(const NestingGuard&) = delete;

private:
    int& depth_;
};

// ---- expressions -------------------------------------------------------------

class ExprParser {
public:
    ExprParser(std::vector<Token> tokens, int line) : t_(std::move(tokens)), line_(line) {}

    bool at_end() const { return t_[p_].kind == Token::Kind::end; }
    bool peek_name(const char* n, size_t ahead = 0) const {
        return p_ + ahead < t_.size() && t_[p_ + ahead].kind == Token::Kind::name && t_[p_ + ahead].text == n;
    }
    bool peek_op(const char* o) const { return t_[p_].kind == Token::Kind::op && t_[p_].text == o; }
    bool accept_name(const char* n) { return peek_name(n) ? (++p_, true) : false; }
    bool accept_op(const char* o) { return peek_op(o) ? (++p_, true) : false; }
    void expect_op(const char* o) {
        if (!accept_op(o)) fail(line_, std::string("expected '") + o + "', got '" + t_[p_].text + "'");
    }
    std::string expect_name() {
        if (t_[p_].kind != Token::Kind::name) fail(line_, "expected a name, got '" + t_[p_].text + "'");
        return t_[p_++].text;
    }
    void expect_end() {
        if (!at_end()) fail(line_, "unexpected '" + t_[p_].text + "'");
    }

    // expression: a ternary, or a tuple when commas follow (for `a, b` in set/for values)
    ExprPtr expression() {
        const NestingGuard guard(depth_, line_);
        ExprPtr e = ternary();
        if (!peek_op(",")) return e;
        auto tuple = make(Expr::Kind::tuple);
        tuple->kids.push_back(e);
        while (accept_op(",")) {
            if (at_end() || peek_op(")")) break;
            tuple->kids.push_back(ternary());
        }
        return tuple;
    }

    ExprPtr ternary() {
        ExprPtr e = or_expr();
        while (peek_name("if")) {
            ++p_;
            auto t = make(Expr::Kind::ternary);
            t->kids = {or_expr(), e};
            t->kids.push_back(accept_name("else") ? ternary() : literal(Value()));
            e = t;
        }
        return e;
    }

    ExprPtr or_expression() { return or_expr(); }

private:
    std::shared_ptr<Expr> make(Expr::Kind k) {
        auto e = std::make_shared<Expr>();
        e->kind = k;
        e->line = line_;
        return e;
    }
    ExprPtr literal(Value v) {
        auto e = make(Expr::Kind::literal);
        e->literal = std::move(v);
        return e;
    }
    ExprPtr binary(std::string op, ExprPtr a, ExprPtr b) {
        auto e = make(Expr::Kind::binary);
        e->name = std::move(op);
        e->kids = {std::move(a), std::move(b)};
        return e;
    }
    ExprPtr or_expr() {
        ExprPtr e = and_expr();
        while (accept_name("or")) e = binary("or", e, and_expr());
        return e;
    }
    ExprPtr and_expr() {
        ExprPtr e = not_expr();
        while (accept_name("and")) e = binary("and", e, not_expr());
        return e;
    }
    ExprPtr not_expr() {
        const NestingGuard guard(depth_, line_);
        if (accept_name("not")) {
            auto e = make(Expr::Kind::unary);
            e->name = "not";
            e->kids = {not_expr()};
            return e;
        }
        return compare();
    }
    ExprPtr compare() {
        ExprPtr e = add();
        for (;;) {
            static const char* ops[] = {"==", "!=", "<=", ">=", "<", ">"};
            bool matched = false;
            for (const char* op : ops) {
                if (accept_op(op)) {
                    e = binary(op, e, add());
                    matched = true;
                    break;
                }
            }
            if (matched) continue;
            if (accept_name("in")) {
                e = binary("in", e, add());
            } else if (peek_name("not") && peek_name("in", 1)) {
                p_ += 2;
                e = binary("not in", e, add());
            } else {
                return e;
            }
        }
    }
    ExprPtr add() {
        ExprPtr e = concat();
        for (;;) {
            if (accept_op("+")) {
                e = binary("+", e, concat());
            } else if (accept_op("-")) {
                e = binary("-", e, concat());
            } else {
                return e;
            }
        }
    }
    ExprPtr concat() {
        ExprPtr e = mul();
        while (accept_op("~")) e = binary("~", e, mul());
        return e;
    }
    ExprPtr mul() {
        ExprPtr e = pow();
        for (;;) {
            const char* op = peek_op("*") ? "*" : peek_op("//") ? "//" : peek_op("/") ? "/" : peek_op("%") ? "%" : nullptr;
            if (op == nullptr) return e;
            ++p_;
            e = binary(op, e, pow());
        }
    }
    ExprPtr pow() {
        ExprPtr e = unary();
        while (accept_op("**")) e = binary("**", e, unary());
        return e;
    }
    ExprPtr unary() {
        const NestingGuard guard(depth_, line_);
        if (peek_op("-") || peek_op("+")) {
            auto e = make(Expr::Kind::unary);
            e->name = t_[p_++].text;
            e->kids = {unary()};
            return filters(e);
        }
        return filters(postfix(primary()));
    }
    void call_args(Expr& e) {
        while (!accept_op(")")) {
            if (t_[p_].kind == Token::Kind::name && t_[p_ + 1].kind == Token::Kind::op && t_[p_ + 1].text == "=") {
                std::string key = t_[p_].text;
                p_ += 2;
                e.kwargs.emplace_back(std::move(key), ternary());
            } else {
                e.kids.push_back(ternary());
            }
            if (!accept_op(",")) {
                expect_op(")");
                break;
            }
        }
    }
    ExprPtr postfix(ExprPtr e) {
        for (;;) {
            if (accept_op(".")) {
                auto a = make(Expr::Kind::attribute);
                a->name = expect_name();
                a->kids = {e};
                e = a;
            } else if (accept_op("[")) {
                ExprPtr parts[3];
                bool is_slice = false;
                for (int k = 0; k < 3; ++k) {
                    if (!peek_op(":") && !peek_op("]")) parts[k] = ternary();
                    if (k < 2 && accept_op(":")) {
                        is_slice = true;
                    } else {
                        break;
                    }
                }
                expect_op("]");
                auto x = make(is_slice ? Expr::Kind::slice : Expr::Kind::index);
                x->kids = {e, parts[0], parts[1], parts[2]};
                if (!is_slice && !parts[0]) fail(line_, "empty subscript []");
                e = x;
            } else if (accept_op("(")) {
                auto c = make(Expr::Kind::call);
                c->kids = {e};
                call_args(*c);
                e = c;
            } else {
                return e;
            }
        }
    }
    ExprPtr filters(ExprPtr e) {
        for (;;) {
            if (accept_op("|")) {
                auto f = make(Expr::Kind::filter);
                f->name = expect_name();
                f->kids = {e};
                if (accept_op("(")) call_args(*f);
                e = f;
            } else if (accept_name("is")) {
                auto t = make(Expr::Kind::test);
                t->negate = accept_name("not");
                if (t_[p_].kind == Token::Kind::op && (t_[p_].text == "==" || t_[p_].text == "!=")) {
                    t->name = t_[p_++].text == "==" ? "eq" : "ne";
                } else {
                    t->name = expect_name();
                }
                t->kids = {e};
                if (accept_op("(")) {
                    call_args(*t);
                } else if (!at_end() && (t_[p_].kind == Token::Kind::string || t_[p_].kind == Token::Kind::integer ||
                                         t_[p_].kind == Token::Kind::number ||
                                         (t_[p_].kind == Token::Kind::name && !peek_name("and") && !peek_name("or") &&
                                          !peek_name("else") && !peek_name("if") && !peek_name("in") && !peek_name("not")))) {
                    t->kids.push_back(postfix(primary()));  // `is divisibleby 3`, `is sameas x`
                }
                e = t;
            } else {
                return e;
            }
        }
    }
    ExprPtr primary() {
        const Token tok = t_[p_];
        switch (tok.kind) {
            case Token::Kind::string: {
                ++p_;
                std::string text = tok.text;
                while (t_[p_].kind == Token::Kind::string) text += t_[p_++].text;  // "a" "b" concatenates
                return literal(Value::string(text));
            }
            case Token::Kind::integer:
            case Token::Kind::number: {
                ++p_;
                try {
                    return literal(tok.kind == Token::Kind::integer ? Value::integer(std::stoll(tok.text))
                                                                    : Value::number(std::stod(tok.text)));
                } catch (const std::out_of_range&) {
                    fail(line_, "number " + tok.text + " is out of range");
                }
            }
            case Token::Kind::name: {
                ++p_;
                if (tok.text == "true" || tok.text == "True") return literal(Value::boolean(true));
                if (tok.text == "false" || tok.text == "False") return literal(Value::boolean(false));
                if (tok.text == "none" || tok.text == "None") return literal(Value::none());
                auto n = make(Expr::Kind::name);
                n->name = tok.text;
                return n;
            }
            case Token::Kind::op:
                if (accept_op("(")) {
                    if (accept_op(")")) return make(Expr::Kind::tuple);
                    ExprPtr e = expression();
                    expect_op(")");
                    return e;
                }
                if (accept_op("[")) {
                    auto l = make(Expr::Kind::list);
                    while (!accept_op("]")) {
                        l->kids.push_back(ternary());
                        if (!accept_op(",")) {
                            expect_op("]");
                            break;
                        }
                    }
                    return l;
                }
                if (accept_op("{")) {
                    auto d = make(Expr::Kind::dict);
                    while (!accept_op("}")) {
                        d->kids.push_back(ternary());
                        expect_op(":");
                        d->kids.push_back(ternary());
                        if (!accept_op(",")) {
                            expect_op("}");
                            break;
                        }
                    }
                    return d;
                }
                break;
            case Token::Kind::end: fail(line_, "the expression ends too early");
        }
        fail(line_, "unexpected '" + tok.text + "'");
    }

    std::vector<Token> t_;
    size_t p_ = 0;
    int line_;
    int depth_ = 0;
};

// ---- statements --------------------------------------------------------------

class Parser {
public:
    explicit Parser(std::vector<Tag> tags) : tags_(std::move(tags)) {}

    Body parse_all() {
        std::string stop;
        Body body = block({}, stop);
        if (!stop.empty()) fail(tags_[pos_ - 1].line, "'{% " + stop + " %}' without a matching opening tag");
        return body;
    }

private:
    // Parses nodes until one of `stops` (an end/else tag) or the end; returns
    // which stop was met in `stop` (empty at the end) with its parser.
    Body block(const std::vector<std::string>& stops, std::string& stop) {
        const NestingGuard guard(depth_, pos_ > 0 ? tags_[pos_ - 1].line : 1);
        Body body;
        while (pos_ < tags_.size()) {
            const Tag& tag = tags_[pos_++];
            if (tag.kind == Tag::Kind::text) {
                auto n = node(Node::Kind::text, tag.line);
                n->text = tag.content;
                body.push_back(n);
                continue;
            }
            ExprParser p(lex(tag.content, tag.line), tag.line);
            if (tag.kind == Tag::Kind::expression) {
                auto n = node(Node::Kind::output, tag.line);
                n->expr = p.expression();
                p.expect_end();
                body.push_back(n);
                continue;
            }
            const std::string keyword = p.expect_name();
            for (const std::string& s : stops) {
                if (keyword == s) {
                    stop = keyword;
                    current_ = std::make_unique<ExprParser>(std::move(p));
                    return body;
                }
            }
            body.push_back(statement(keyword, p, tag.line));
        }
        stop.clear();
        return body;
    }

    void require(const std::string& stop, const char* wanted, int line) {
        if (stop.empty()) fail(line, std::string("missing '{% ") + wanted + " %}'");
    }

    NodePtr statement(const std::string& keyword, ExprParser& p, int line) {
        if (keyword == "if") {
            auto n = node(Node::Kind::if_chain, line);
            ExprPtr condition = p.expression();
            p.expect_end();
            for (;;) {
                std::string stop;
                Body body = block({"elif", "else", "endif"}, stop);
                require(stop, "endif", line);
                n->branches.emplace_back(condition, std::move(body));
                if (stop == "endif") break;
                if (stop == "elif") {
                    condition = current_->expression();
                    current_->expect_end();
                } else {
                    current_->expect_end();
                    std::string end;
                    Body else_body = block({"endif"}, end);
                    require(end, "endif", line);
                    n->branches.emplace_back(nullptr, std::move(else_body));
                    break;
                }
            }
            return n;
        }
        if (keyword == "for") {
            auto n = node(Node::Kind::for_loop, line);
            n->names.push_back(p.expect_name());
            while (p.accept_op(",")) n->names.push_back(p.expect_name());
            if (!p.accept_name("in")) fail(line, "expected 'in' in the for statement");
            n->expr = p.or_expression();  // jinja2: the iterable is no conditional expression
            if (p.accept_name("if")) n->condition = p.ternary();
            if (p.accept_name("recursive")) fail(line, "recursive for loops are not supported");
            p.expect_end();
            std::string stop;
            n->body = block({"else", "endfor"}, stop);
            require(stop, "endfor", line);
            if (stop == "else") {
                current_->expect_end();
                n->else_body = block({"endfor"}, stop);
                require(stop, "endfor", line);
            }
            return n;
        }
        if (keyword == "set") {
            // {% set x = v %}, {% set a, b = v %}, {% set ns.x = v %}, or {% set x %}...{% endset %}
            std::string first = p.expect_name();
            if (p.accept_op(".")) {
                auto n = node(Node::Kind::set, line);
                auto target = std::make_shared<Expr>();
                target->kind = Expr::Kind::attribute;
                target->name = p.expect_name();
                auto object = std::make_shared<Expr>();
                object->kind = Expr::Kind::name;
                object->name = first;
                target->kids = {object};
                n->target = target;
                p.expect_op("=");
                n->expr = p.expression();
                p.expect_end();
                return n;
            }
            std::vector<std::string> names{first};
            while (p.accept_op(",")) names.push_back(p.expect_name());
            if (p.at_end() && names.size() == 1) {
                auto n = node(Node::Kind::set_block, line);
                n->names = names;
                std::string stop;
                n->body = block({"endset"}, stop);
                require(stop, "endset", line);
                return n;
            }
            auto n = node(Node::Kind::set, line);
            n->names = names;
            p.expect_op("=");
            n->expr = p.expression();
            p.expect_end();
            return n;
        }
        if (keyword == "macro") {
            auto n = node(Node::Kind::macro, line);
            n->text = p.expect_name();
            p.expect_op("(");
            while (!p.accept_op(")")) {
                std::string name = p.expect_name();
                ExprPtr fallback;
                if (p.accept_op("=")) fallback = p.ternary();
                n->params.emplace_back(std::move(name), fallback);
                if (!p.accept_op(",")) {
                    p.expect_op(")");
                    break;
                }
            }
            p.expect_end();
            std::string stop;
            n->body = block({"endmacro"}, stop);
            require(stop, "endmacro", line);
            return n;
        }
        if (keyword == "generation") {  // transformers' assistant-mask marker: renders its body
            auto n = node(Node::Kind::if_chain, line);
            std::string stop;
            Body body = block({"endgeneration"}, stop);
            require(stop, "endgeneration", line);
            auto always = std::make_shared<Expr>();
            always->literal = Value::boolean(true);
            n->branches.emplace_back(always, std::move(body));
            return n;
        }
        if (keyword == "break" || keyword == "continue") {
            p.expect_end();
            return node(keyword == "break" ? Node::Kind::break_loop : Node::Kind::continue_loop, line);
        }
        fail(line, "'{% " + keyword + " %}' is not supported (supported: if, for, set, macro, generation, break, continue, raw)");
    }

    std::shared_ptr<Node> node(Node::Kind kind, int line) {
        auto n = std::make_shared<Node>();
        n->kind = kind;
        n->line = line;
        return n;
    }

    std::vector<Tag> tags_;
    size_t pos_ = 0;
    int depth_ = 0;
    std::unique_ptr<ExprParser> current_;  // the parser of the stop tag last met
};

}  // namespace

Body parse_template(const std::string& source) { return Parser(split_tags(source)).parse_all(); }

}  // namespace tf::tokenizer::chat
