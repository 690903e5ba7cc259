// The Jinja engine on what jinja2 cannot be compared with: where errors are reported (template name,
// line and column), what is refused (include, import, extends, block), the limits that keep a hostile
// template from crashing the process, and values from JSON. Its agreement with jinja2 is tested by
// jinja_snippets_test and chat_template_parity_test.
#include <chrono>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tokenizer/jinja/template.h"

namespace ls::tok::jinja {
namespace {

std::string render(const std::string& source,
                   const nlohmann::ordered_json& variables = nlohmann::ordered_json::object()) {
  return Template(source, "t.jinja").render(Value::from_json(variables).as_dict());
}

// The error rendering `source` raises: "kind line:column message".
std::string error_of(const std::string& source) {
  try {
    render(source);
  } catch (const TemplateError& e) {
    EXPECT_EQ(std::string(e.what()),
              "t.jinja:" + std::to_string(e.line()) + ":" + std::to_string(e.column()) + ": " + e.message());
    return std::string(python_name(e.kind())) + " " + std::to_string(e.line()) + ":" + std::to_string(e.column()) +
           " " + e.message();
  }
  return "(no error)";
}

TEST(JinjaEngine, ErrorsNameTheLineAndColumn) {
  EXPECT_EQ(error_of("a\n  {{ raise_exception('no ' ~ 1) }}"), "TemplateError 2:6 no 1");
  EXPECT_EQ(error_of("{% for m in x %}\n{{ m.content.nope.x }}{% endfor %}"), "(no error)");  // x undefined: no loop
  EXPECT_EQ(error_of("{% set x = {'a': {}} %}\n\n  {{ x.a.b.c }}"),
            "UndefinedError 3:6 'dict object' has no attribute 'b'");
  EXPECT_EQ(error_of("{{ 1 +\n 'a' }}"), "TypeError 1:4 unsupported operand type(s) for +: 'int' and 'str'");
  EXPECT_EQ(error_of("ok\n{% if %}"), "TemplateSyntaxError 2:7 Expected an expression, got 'end of statement block'");
  EXPECT_EQ(error_of("{{ 'é' ~ x | bogus }}"), "TemplateSyntaxError 1:14 No filter named 'bogus'.");
  EXPECT_EQ(error_of("{{ 'abc }}"), "TemplateSyntaxError 1:4 unexpected char \"'\" at 3");
  EXPECT_EQ(error_of("{# never closed"), "TemplateSyntaxError 1:1 Missing end of comment tag");
  EXPECT_EQ(error_of("{{ '\\x4' }}"), "TemplateSyntaxError 1:4 truncated \\xXX escape");
}

TEST(JinjaEngine, RefusesWhatReachesOutside) {
  for (const char* tag : {"{% include 'x' %}", "{% import 'x' as y %}", "{% from 'x' import y %}", "{% extends 'x' %}",
                          "{% block b %}{% endblock %}"})
    EXPECT_NE(error_of(tag).find("unsupported 1:4 "), std::string::npos) << tag << ": " << error_of(tag);
  EXPECT_NE(error_of("{% do x %}").find("Encountered unknown tag 'do'."), std::string::npos);
  EXPECT_NE(error_of("{{ ''.__class__ }}").find("no error"),
            std::string::npos);  // an undefined attribute, printed empty
}

TEST(JinjaEngine, LimitsKeepHostileTemplatesFromCrashing) {
  std::string deep = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  EXPECT_NE(error_of(deep).find("too deeply nested"), std::string::npos);
  std::string nots = "{{ " + std::string(0, ' ');
  for (int i = 0; i < 5000; ++i) nots += "not ";
  EXPECT_NE(error_of(nots + "1 }}").find("too deeply nested"), std::string::npos);
  std::string ifs;
  for (int i = 0; i < 300; ++i) ifs += "{% if true %}";
  EXPECT_NE(error_of(ifs).find("too deeply nested"), std::string::npos);
  EXPECT_NE(error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").find("maximum recursion depth exceeded"),
            std::string::npos);
  EXPECT_NE(error_of("{{ 'ab' * 1000000000000 }}").find("too large"), std::string::npos);
  EXPECT_NE(error_of("{{ range(1000000) | length }}").find("Range too big"), std::string::npos);
  EXPECT_NE(error_of("{{ 3 ** 100 }}").find("does not fit in 64 bits"), std::string::npos);
  EXPECT_EQ(render("{{ 1 ** 100000000000 }} {{ (-1) ** 1000000000001 }} {{ 2 ** 62 }}"), "1 -1 4611686018427387904");
}

// chat_template_fuzz's timeout (session 31): every token's column was counted from its line's start, so a long
// line lexed in quadratic time (the 280 KB line below took 6.4 s in the Release build, and this test lexes three
// such lines). Now linear: 0.2 s in Release, 1.4 s under ASan on a loaded machine. The limit leaves room for slow
// machines and ASan, not for the quadratic lexer; the columns are still those of every token (the error on the
// line's last one).
TEST(JinjaEngine, LongLinesLexInLinearTime) {
  std::string line;
  for (int i = 0; i < 40000; ++i) line += "{{ 1 }}";
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(render(line), std::string(40000, '1'));
  EXPECT_EQ(error_of(line + "\n" + line + "{{ 'é' ~ x | bogus }}"),
            "TemplateSyntaxError 2:280014 No filter named 'bogus'.");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
}

TEST(JinjaEngine, ValuesFromJson) {
  const auto v =
      nlohmann::ordered_json::parse(R"({"z": 1, "a": [1.0, 2, true, null, "é"], "big": 18446744073709551615})");
  EXPECT_EQ(render("{{ d }} {{ d | tojson }} {{ d.big }}", {{"d", v}}),
            "{'z': 1, 'a': [1.0, 2, True, None, 'é'], 'big': 1.8446744073709552e+19} "
            "{\"z\": 1, \"a\": [1.0, 2, true, null, \"é\"], \"big\": 1.8446744073709552e+19} 1.8446744073709552e+19");
  // nlohmann::json (not ordered) sorts keys; ordered_json keeps the file's order, as Python does.
  EXPECT_EQ(Template("{{ d }}", "t").render(Value::from_json(nlohmann::json{{"d", {{"z", 1}, {"a", 2}}}}).as_dict()),
            "{'a': 2, 'z': 1}");
}

TEST(JinjaEngine, TemplatesAreReusable) {
  const Template t("{% set ns = namespace(n=0) %}{% for x in xs %}{% set ns.n = ns.n + x %}{% endfor %}{{ ns.n }}",
                   "t");
  for (int i = 1; i <= 3; ++i) {
    Dict vars;
    vars.set(Value("xs"), Value(List{Value(i), Value(i)}));
    EXPECT_EQ(t.render(vars), std::to_string(2 * i));
  }
}

}  // namespace
}  // namespace ls::tok::jinja
