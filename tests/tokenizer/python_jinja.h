#pragma once
// Python's jinja2, set up as transformers sets it up (tests/fixtures/render_jinja.py), as the reference
// for the Jinja engine's tests, and the comparison of its results with ours. The interpreter is
// LS_PYTHON when set, else /usr/bin/python3 (Debian's, where python3-jinja2 installs), else python3.
// A missing jinja2 fails the test: scripts/deps.sh installs python3-jinja2 with the test packages.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tokenizer/jinja/template.h"
#include "tokenizer_fixtures.h"

namespace ls::test {

using OrderedJson = nlohmann::ordered_json;

// One rendering: the text, or the error (its Python class and message).
struct Rendering {
  bool ok = false;
  std::string text, error_type, error;
};

inline std::string python_executable() {
  if (const char* p = std::getenv("LS_PYTHON")) return p;
  if (std::filesystem::exists("/usr/bin/python3")) return "/usr/bin/python3";
  return "python3";
}

// Renders every job ({"template": ..., "variables": {...}}) with jinja2; `version` gets jinja2's version.
// Fails the test (and returns nothing) when Python or jinja2 cannot run.
inline std::vector<Rendering> render_with_python(const OrderedJson& jobs, std::string* version = nullptr) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string stem = "ls_jinja_" + std::to_string(::getpid());
  const auto in = dir / (stem + "_jobs.json"), out = dir / (stem + "_results.json");
  std::ofstream(in, std::ios::binary) << OrderedJson{{"jobs", jobs}}.dump();
  const std::string command = python_executable() + " " + (source_dir() / "tests/fixtures/render_jinja.py").string() +
                              " " + in.string() + " " + out.string() + " 2>&1";
  std::string output;
  if (FILE* p = ::popen(command.c_str(), "r")) {
    char buf[4096];
    while (size_t n = std::fread(buf, 1, sizeof buf, p)) output.append(buf, n);
    const int status = ::pclose(p);
    if (status != 0) {
      ADD_FAILURE() << command << " failed (python3-jinja2 missing? `source scripts/deps.sh; "
                    << "ls_install_deps python3-jinja2`):\n"
                    << output;
      return {};
    }
  }
  std::ifstream f(out, std::ios::binary);
  const auto results = nlohmann::json::parse(f);
  std::filesystem::remove(in);
  std::filesystem::remove(out);
  if (version) *version = results.at("jinja2").get<std::string>();
  std::vector<Rendering> r;
  for (const auto& x : results.at("results")) {
    if (x.contains("text"))
      r.push_back({.ok = true, .text = x.at("text")});
    else
      r.push_back({.ok = false, .error_type = x.at("type"), .error = x.at("error")});
  }
  return r;
}

// Renders with our engine; `variables` is a JSON object.
inline Rendering render_with_engine(const std::string& source, const OrderedJson& variables, const std::string& name) {
  try {
    tok::jinja::Template t(source, name);
    return {.ok = true, .text = t.render(tok::jinja::Value::from_json(variables).as_dict())};
  } catch (const tok::jinja::TemplateError& e) {
    return {.ok = false, .error_type = tok::jinja::python_name(e.kind()), .error = e.message()};
  }
}

// Python's exception classes that raise_exception() and Undefined raise: their messages must match ours.
inline bool message_must_match(const std::string& python_type) {
  return python_type == "TemplateError" || python_type == "UndefinedError" || python_type == "SecurityError";
}

// Empty when `ours` matches `theirs`: the same text, or both failing (with the same message where the
// message is the template's or Undefined's); else what differs.
inline std::string difference(const Rendering& ours, const Rendering& theirs) {
  if (ours.ok && theirs.ok) {
    if (ours.text == theirs.text) return "";
    return "text differs:\n  jinja2: " + escaped(theirs.text) + "\n  ours:   " + escaped(ours.text);
  }
  if (!ours.ok && !theirs.ok) {
    if (!message_must_match(theirs.error_type)) return "";
    if (ours.error_type == theirs.error_type && ours.error == theirs.error) return "";
    return "errors differ:\n  jinja2: " + theirs.error_type + ": " + theirs.error + "\n  ours:   " + ours.error_type +
           ": " + ours.error;
  }
  if (!ours.ok)
    return "jinja2 renders " + escaped(theirs.text) + "\n  ours fails: " + ours.error_type + ": " + ours.error;
  return "jinja2 fails (" + theirs.error_type + ": " + theirs.error + ")\n  ours renders " + escaped(ours.text);
}

}  // namespace ls::test
