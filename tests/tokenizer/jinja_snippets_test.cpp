// The Jinja engine against Python's jinja2 on small templates that each exercise a feature
// (tests/fixtures/jinja_snippets.txt): whitespace control, values printed as Python prints them,
// arithmetic, filters, tests, loops, scoping, macros, the sandbox, errors. The same text, or both failing.
#include <gtest/gtest.h>

#include "python_jinja.h"

namespace ls::test {
namespace {

struct Snippet {
  std::string name, source;
};

// The file: a JSON object (the variables), then snippets, each after a line "=== name".
std::vector<Snippet> read_snippets(OrderedJson& variables) {
  std::ifstream in(source_dir() / "tests/fixtures/jinja_snippets.txt", std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  const std::string marker = "\n=== ";
  size_t at = text.find(marker);
  variables = OrderedJson::parse(text.substr(0, at));
  variables.erase("comment");
  std::vector<Snippet> out;
  while (at != std::string::npos) {
    const size_t name_end = text.find('\n', at + marker.size());
    const size_t next = text.find(marker, name_end);
    Snippet s;
    s.name = text.substr(at + marker.size(), name_end - at - marker.size());
    s.source = text.substr(name_end + 1, (next == std::string::npos ? text.size() : next) - name_end - 1);
    if (next == std::string::npos && !s.source.empty() && s.source.back() == '\n') s.source.pop_back();
    out.push_back(std::move(s));
    at = next;
  }
  return out;
}

TEST(JinjaSnippets, RenderAsJinja2Does) {
  OrderedJson variables;
  const auto snippets = read_snippets(variables);
  ASSERT_GT(snippets.size(), 50u);
  OrderedJson jobs = OrderedJson::array();
  for (const auto& s : snippets) jobs.push_back({{"template", s.source}, {"variables", variables}});
  std::string version;
  const auto reference = render_with_python(jobs, &version);
  ASSERT_EQ(reference.size(), snippets.size());
  size_t differences = 0, errors = 0;
  for (size_t i = 0; i < snippets.size(); ++i) {
    const auto ours = render_with_engine(snippets[i].source, variables, snippets[i].name);
    errors += reference[i].ok ? 0 : 1;
    if (std::getenv("LS_JINJA_VERBOSE") && !reference[i].ok)  // the errors side by side
      std::cout << snippets[i].name << "\n  jinja2: " << reference[i].error_type << ": " << reference[i].error
                << "\n  ours:   " << (ours.ok ? "renders" : ours.error_type + ": " + ours.error) << "\n";
    const std::string diff = difference(ours, reference[i]);
    if (diff.empty()) continue;
    ++differences;
    ADD_FAILURE() << "snippet \"" << snippets[i].name << "\": " << diff;
  }
  std::cout << "jinja snippets: " << snippets.size() << " (" << errors << " raising), " << differences
            << " differences from jinja2 " << version << "\n";
}

}  // namespace
}  // namespace ls::test
