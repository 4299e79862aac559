// The Jinja subset of chat templates, one construct per test, plus the
// errors for what lies outside it.
#include <gtest/gtest.h>

#include "tests/tokenizer/tokenizer_test_support.h"
#include "tokenizer/chat_template/template.h"

namespace tf::tokenizer::chat {
namespace {

std::string render(const std::string& source, Object vars = {}) { return Template(source).render_with(vars); }

std::string error_of(const std::string& source, Object vars = {}) {
    try {
        render(source, std::move(vars));
    } catch (const TokenizerError& e) {
        return e.what();
    }
    return "(rendered)";
}

Value msgs() {
    return messages_value({{"system", std::string("sys")}, {"user", std::string("hi")}, {"assistant", std::string("yo")}});
}

TEST(ChatTemplate, ForLoopsExposeTheLoopVariables) {
    EXPECT_EQ(render("{% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.length }}"
                     "{% if loop.first %}F{% endif %}{% if loop.last %}L{% endif %}{{ m.role[0] }};{% endfor %}",
                     {{"messages", msgs()}}),
              "1033Fs;2123u;3213La;");
}

TEST(ChatTemplate, ForElseFilterBreakAndContinue) {
    EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
    EXPECT_EQ(render("{% for x in range(10) if x is odd %}{% if x > 6 %}{% break %}{% endif %}{{ x }}{% endfor %}"), "135");
    EXPECT_EQ(render("{% for x in [1,2,3] %}{% if x == 2 %}{% continue %}{% endif %}{{ x }}{% endfor %}"), "13");
    EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }},{% endfor %}"), "a=1,b=2,");
}

TEST(ChatTemplate, IfElifElseAndTernary) {
    const std::string t = "{% if n == 1 %}one{% elif n == 2 %}two{% else %}many{% endif %}|{{ 'y' if n > 1 else 'n' }}";
    EXPECT_EQ(render(t, {{"n", Value::integer(1)}}), "one|n");
    EXPECT_EQ(render(t, {{"n", Value::integer(2)}}), "two|y");
    EXPECT_EQ(render(t, {{"n", Value::integer(7)}}), "many|y");
}

TEST(ChatTemplate, SetDoesNotLeaveALoopButANamespaceDoes) {
    EXPECT_EQ(render("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}"), "1");
    EXPECT_EQ(render("{% set ns = namespace(x=1) %}{% for i in [1] %}{% set ns.x = 2 %}{% endfor %}{{ ns.x }}"), "2");
    EXPECT_EQ(render("{% set a, b = [1, 2] %}{{ b }}{{ a }}"), "21");
    EXPECT_EQ(render("{% set block %}in {{ 1 + 1 }}{% endset %}[{{ block }}]"), "[in 2]");
}

// Found by the chat_template fuzzer: `ns.n = ns` made a namespace own itself,
// which reference counting never frees (and printing it would never end).
TEST(ChatTemplate, AContainerCannotBeStoredInsideItself) {
    EXPECT_EQ(error_of("{% set ns = namespace(n=0) %}{% set ns.n = ns %}"), "chat template line 1: cannot store 'ns' inside itself");
    EXPECT_EQ(error_of("{% set ns = namespace(l=[]) %}{% set ns.n = [1, {'k': ns}] %}"),
              "chat template line 1: cannot store 'ns' inside itself");
    EXPECT_EQ(error_of("{% set l = [] %}{% set m = [l] %}{{ l.append(m) }}"),
              "chat template line 1: append(): cannot put a list inside itself");
    // The same value in two places is not a cycle.
    EXPECT_EQ(render("{% set a = namespace(n=0) %}{% set b = namespace(x=a, y=a) %}{% set a.n = [b.x.n, b.y.n] %}{{ a.n }}"), "[0, 0]");
    EXPECT_EQ(render("{% set l = [] %}{% set x = [1] %}{{ l.append(x) }}{{ l.append(x) }}{{ l }}"), "NoneNone[[1], [1]]");
}

TEST(ChatTemplate, WhitespaceControlTrimBlocksAndLstripBlocks) {
    EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif -%}  c"), "abc");
    EXPECT_EQ(render("{% if true %}\nline\n{% endif %}\n"), "line\n");
    EXPECT_EQ(render("x\n    {% if true %}\n    y\n    {% endif %}\nz"), "x\n    y\nz");
    EXPECT_EQ(render("{{ 'a' }}\n{{- 'b' }}  {#- comment -#}  c"), "abc");
    EXPECT_EQ(render("{% raw %}{{ not evaluated }}{% endraw %}"), "{{ not evaluated }}");
}

TEST(ChatTemplate, StringConcatenationComparisonsAndMembership) {
    EXPECT_EQ(render("{{ 'a' + 'b' ~ 1 ~ none }}"), "ab1None");
    EXPECT_EQ(render("{{ 'ell' in 'hello' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'abc' }}"),
              "True True True True");
    EXPECT_EQ(render("{{ 1 < 2 and not (2 <= 1) or false }} {{ 7 // 2 }} {{ 7 % 3 }} {{ 2 ** 3 }} {{ 7 / 2 }}"),
              "True 3 1 8 3.5");
}

TEST(ChatTemplate, TestsDefinedNoneStringAndFriends) {
    EXPECT_EQ(render("{{ x is defined }} {{ y is defined }} {{ y is undefined }} {{ n is none }} {{ x is string }} "
                     "{{ 3 is number }} {{ [] is iterable }} {{ {} is mapping }} {{ 4 is even }} {{ x is not none }}",
                     {{"x", Value::string("s")}, {"n", Value::none()}}),
              "True False True True True True True True True True");
    EXPECT_EQ(render("{{ f is false }} {{ t is true }} {{ 3 is divisibleby 3 }}", {{"f", Value::boolean(false)}, {"t", Value::boolean(true)}}),
              "True True True");
}

TEST(ChatTemplate, FiltersCommonTemplatesUse) {
    EXPECT_EQ(render("[{{ '  x  ' | trim }}] {{ [1, 2] | length }} {{ 'ab' | upper }} {{ 5 | string ~ '!' }}"), "[x] 2 AB 5!");
    EXPECT_EQ(render("{{ {'a': [1, 'é', none, true, 1.5]} | tojson }}"), R"({"a": [1, "é", null, true, 1.5]})");
    EXPECT_EQ(render("{{ {'a': 1} | tojson(indent=2) }}"), "{\n  \"a\": 1\n}");
    EXPECT_EQ(render("{{ [3, 1, 2] | sort | join(',') }} {{ [1, 2] | first }}{{ [1, 2] | last }} {{ y | default('d') }}"),
              "1,2,3 12 d");
    EXPECT_EQ(render("{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | join }}",
                     {{"messages", msgs()}}),
              "hi");
    EXPECT_EQ(render("{{ 'a\nb' | indent(2) }}|{{ 'x y' | replace(' ', '_') }}|{{ 'hello world' | title }}"),
              "a\n  b|x_y|Hello World");
}

TEST(ChatTemplate, SlicingIndexingAndLiterals) {
    EXPECT_EQ(render("{{ [1, 2, 3][::-1] }} {{ 'abcdef'[1:3] }} {{ [1, 2, 3][-1] }} {{ 'héllo'[1] }} {{ (1, 2)[0] }}"),
              "[3, 2, 1] bc 3 é 1");
    EXPECT_EQ(render("{% for m in messages[::-1] %}{{ m['role'] }} {% endfor %}", {{"messages", msgs()}}),
              "assistant user system ");
    EXPECT_EQ(render("{{ {'k': 'v'}.k }}{{ {'k': 'v'}['k'] }}{{ [1, [2, 3]][1][0] }}"), "vv2");
}

TEST(ChatTemplate, StringAndDictMethods) {
    EXPECT_EQ(render("{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith(('x', 'c')) }} [{{ '\n x \n'.strip() }}] "
                     "{{ 'a</think>b'.split('</think>')[-1] }} {{ '\nq'.lstrip('\n') }} {{ 'xxyxx'.rstrip('x') }}"),
              "True True [x] b q xxy");
    EXPECT_EQ(render("{{ d.get('a') }} {{ d.get('z', 'none') }} {{ d.get('z') }} {% for k in d.keys() %}{{ k }}{% endfor %}",
                     {{"d", Value::dict({{"a", Value::integer(1)}})}}),
              "1 none None a");
    EXPECT_EQ(render("{{ 'a b  c'.split() | length }} {{ ', '.join(['x', 'y']) }} {{ 'Hi'.lower() }}"), "3 x, y hi");
}

TEST(ChatTemplate, MacrosTakePositionalKeywordAndDefaultArguments) {
    EXPECT_EQ(render("{% macro tag(name, open=true) %}<{{ '' if open else '/' }}{{ name }}>{% endmacro %}"
                     "{{ tag('a') }}{{ tag('a', open=false) }}"),
              "<a></a>");
}

TEST(ChatTemplate, RaiseExceptionStopsRenderingWithTheMessage) {
    EXPECT_EQ(error_of("{{ raise_exception('Roles must alternate') }}"),
              "chat template raised an exception: Roles must alternate");
}

TEST(ChatTemplate, ConstructsOutsideTheSubsetFailClearly) {
    EXPECT_EQ(error_of("{% include 'x.jinja' %}"),
              "chat template line 1: '{% include %}' is not supported (supported: if, for, set, macro, generation, break, "
              "continue, raw)");
    EXPECT_EQ(error_of("\n{{ x | wordwrap }}", {{"x", Value::string("a")}}),
              "chat template line 2: filter 'wordwrap' is not supported");
    EXPECT_EQ(error_of("{% if x %}"), "chat template line 1: missing '{% endif %}'");
    EXPECT_EQ(error_of("{{ 'abc'.zfill(5) }}"), "chat template line 1: string has no method 'zfill'");
    EXPECT_EQ(error_of("{{ x is prime }}", {{"x", Value::integer(1)}}),
              "chat template line 1: test 'prime' is not supported or needs an argument");
    EXPECT_EQ(error_of("{{ 'a' + 1 }}"), "chat template line 1: cannot apply '+' to string and int");
}

TEST(ChatTemplate, AMissingTemplateIsAClearError) {
    const Tokenizer tok = testing::load_model("llama2");  // its config has no chat_template
    EXPECT_FALSE(tok.has_chat_template());
    try {
        tok.render_chat({});
        FAIL() << "no error";
    } catch (const TokenizerError& e) {
        EXPECT_NE(std::string(e.what()).find("has no chat template"), std::string::npos) << e.what();
    }
}

TEST(ChatTemplate, ChatTemplateJinjaBesideTheConfigWinsAndNamedTemplatesWork) {
    const std::string tokenizer = testing::read_text(testing::tinycode_dir() / "tokenizer.json");
    const Tokenizer from_file = Tokenizer::from_json(tokenizer, "{}", "tokenizer.json", "{{ messages[0].content }}!");
    EXPECT_EQ(from_file.render_chat({{{"user", std::string("hi")}}}), "hi!");
    const std::string named = R"({"chat_template": [{"name": "default", "template": "D{{ messages | length }}"},
                                                    {"name": "tool_use", "template": "T{{ tools | length }}"}]})";
    const Tokenizer tok = Tokenizer::from_json(tokenizer, named);
    ChatRequest request{{{"user", std::string("hi")}}};
    EXPECT_EQ(tok.render_chat(request), "D1");
    request.tools_json = {R"({"type": "function"})"};
    EXPECT_EQ(tok.render_chat(request), "T1");
}

TEST(ChatTemplate, ReadsVariableFindsANameInAnyExpressionButNotInText) {
    EXPECT_TRUE(Template("{% if tools %}x{% endif %}").reads_variable("tools"));
    EXPECT_TRUE(Template("{% for t in tools %}{{ t | tojson }}{% endfor %}").reads_variable("tools"));
    EXPECT_TRUE(Template("{% macro m(x=tools) %}{% endmacro %}").reads_variable("tools"));
    EXPECT_TRUE(Template("{{ f(a=tools[0]) if messages else '' }}").reads_variable("tools"));
    EXPECT_FALSE(Template("Use the tools you have. {{ messages[0].tools }}").reads_variable("tools"));
}

TEST(ChatTemplate, SupportsToolsWhenTheToolsTemplateReadsTools) {
    EXPECT_FALSE(testing::load_model("tinycode").supports_tools());
    EXPECT_TRUE(testing::load_model("qwen3").supports_tools());
    const std::string tokenizer = testing::read_text(testing::tinycode_dir() / "tokenizer.json");
    const std::string named = R"({"chat_template": [{"name": "default", "template": "D"},
                                                    {"name": "tool_use", "template": "{{ tools }}<tool_call>"}]})";
    const Tokenizer tok = Tokenizer::from_json(tokenizer, named);
    EXPECT_TRUE(tok.supports_tools());
    EXPECT_EQ(tok.tools_template_source(), "{{ tools }}<tool_call>");
    EXPECT_FALSE(Tokenizer::from_json(tokenizer, "{}").supports_tools());
    EXPECT_EQ(Tokenizer::from_json(tokenizer, "{}").tools_template_source(), "");
}

}  // namespace
}  // namespace tf::tokenizer::chat
