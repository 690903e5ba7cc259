// The commands of README.md and docs/*.md, run as a reader runs them (issue 8: every documented command
// works on a fresh clone). Each file is one scenario, its commands in order, in a fresh folder that stands
// for the repository root (tests/ and assets/ linked in), with HOME inside it:
//  - ```sh blocks: each command (lines joined at a trailing backslash, comments dropped) that starts with
//    `lorastudio` runs through /bin/sh with the built binary first on PATH, stdin empty, no display. It
//    must exit 0, or with the code its comment names (`# exit code 1`).
//  - `llama-completion` (llama.cpp on the CPU) runs too where scripts/fetch_llamacpp.sh built it into
//    .cache/llamacpp/lib, and must exit 0.
//  - Other commands (huggingface-cli, python3, accelerate, llama-cli, ollama, the build scripts) are not run:
//    the test prints each with the reason. `<!-- docs-test: skip REASON -->` before a block skips its commands.
//  - A block whose info string says file=NAME (```jsonl file=train.jsonl) is written to NAME when reached.
//  - A ```text block right after a block of commands is the last command's output: each of its lines must
//    be a line of what the command printed (stdout and stderr).
// Stand-ins: ~/models/NAME is a link to the fixture model (tests/fixtures/models/llama_tiny when NAME says
// llama, else qwen2_tiny); a .jsonl file a command names that no block wrote is a copy of
// assets/demo/tiny_chat.jsonl; --batch and --demo train at most 2 steps of at most 2 sequences (`--steps N`
// becomes `--steps 2`, and one without it gets it; `--batch-size N` becomes 2). These stand-ins apply to the
// commands expected to succeed; the failing examples run as written. `--demo` commands are skipped while
// the binary has no --demo.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "app/run_app.h"

namespace ls {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = LS_SOURCE_DIR;
// llama.cpp's llama-completion, built beside its CPU backends by scripts/fetch_llamacpp.sh.
const fs::path kLlamaCompletion = kSource / ".cache/llamacpp/lib/llama-completion";

// [SECTION] Markdown: fenced blocks and the commands in them

struct Command {
  std::string text;             // joined, without the comment
  int expect_code = 0;          // from "# exit code N"
  std::string skip;             // why it is not run (empty: run it)
  std::string expected_output;  // the ```text block after its block, for the last command of a block
  int line = 0;                 // where it starts in the file
};

struct Step {  // in file order: a file to write, or a command to run
  std::optional<std::pair<std::string, std::string>> file;  // name, contents
  std::optional<Command> command;
};

// Splits one shell line into the command part and its comment (a # that starts a word outside quotes).
std::pair<std::string, std::string> split_comment(const std::string& line) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote) {
      if (c == quote) quote = 0;
      else if (c == '\\' && quote == '"') ++i;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '\\') {
      ++i;
    } else if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
      return {line.substr(0, i), line.substr(i + 1)};
    }
  }
  return {line, ""};
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) out.push_back(l);
  return out;
}

// The first word that is not a VAR=value assignment.
std::string program_of(const std::string& command) {
  std::stringstream ss(command);
  for (std::string w; ss >> w;)
    if (!std::regex_match(w, std::regex("[A-Za-z_][A-Za-z0-9_]*=.*"))) return w;
  return "";
}

// Why a command that is not lorastudio's is not run.
std::string skip_reason(const std::string& program) {
  static const std::map<std::string, std::string> kReasons = {
      {"huggingface-cli", "needs the network (the Hugging Face hub)"},
      {"hf", "needs the network (the Hugging Face hub)"},
      {"git", "needs the network"},
      {"pip", "needs the network (PyPI)"},
      {"pip3", "needs the network (PyPI)"},
      {"python3", "needs Python with PyTorch, transformers and PEFT (or llama.cpp's scripts)"},
      {"python", "needs Python with PyTorch, transformers and PEFT (or llama.cpp's scripts)"},
      {"accelerate", "needs accelerate, PyTorch and GPUs"},
      {"llama-cli", "needs llama.cpp (an interactive chat)"},
      {"llama-completion", "needs llama.cpp (scripts/fetch_llamacpp.sh builds it into .cache/llamacpp/lib)"},
      {"llama-server", "needs llama.cpp"},
      {"ollama", "needs Ollama"},
      {"lms", "needs LM Studio"},
      {"scripts/run.sh", "builds the project (this test runs inside a build)"},
      {"scripts/test.sh", "builds and tests the project (this test runs inside a build)"},
      {"cmake", "builds the project (this test runs inside a build)"},
      {"ctest", "runs the test suite (this test is part of it)"},
      {"sudo", "installs Debian packages"},
      {"apt-get", "installs Debian packages"},
      {"apt", "installs Debian packages"},
      {"export", "sets up the shell (the test puts the built lorastudio on PATH itself)"},
      {"source", "sets up the shell"},
  };
  auto it = kReasons.find(program);
  return it != kReasons.end() ? it->second : "not a lorastudio command";
}

// The commands of one ```sh block (lines joined at a trailing backslash).
std::vector<Command> parse_commands(const std::vector<std::string>& block, int first_line, const std::string& skip) {
  std::vector<Command> out;
  std::string text, comment;
  int start = 0;
  for (size_t i = 0; i < block.size(); ++i) {
    auto [code, note] = split_comment(block[i]);
    if (text.empty()) start = first_line + int(i);
    std::string part = trim(code);
    const bool continued = !part.empty() && part.back() == '\\';
    if (continued) part = trim(part.substr(0, part.size() - 1));
    if (!part.empty()) text += (text.empty() ? "" : " ") + part;
    if (!note.empty()) comment += " " + note;
    if (continued) continue;
    if (!text.empty()) {
      Command c{.text = text, .line = start};
      std::smatch m;
      if (std::regex_search(comment, m, std::regex("exit code (\\d+)"))) c.expect_code = std::stoi(m[1]);
      const std::string program = program_of(text);
      const bool runnable = program == "lorastudio" || (program == "llama-completion" && fs::exists(kLlamaCompletion));
      c.skip = !skip.empty() ? skip : runnable ? "" : skip_reason(program);
      out.push_back(c);
    }
    text.clear();
    comment.clear();
  }
  return out;
}

// The steps of a Markdown file, in order.
std::vector<Step> parse_markdown(const std::string& markdown) {
  const auto lines = lines_of(markdown);
  std::vector<Step> steps;
  std::string skip;             // from <!-- docs-test: skip REASON -->, for the next block
  bool after_commands = false;  // the last block was a block of commands (only blank lines since)
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string line = trim(lines[i]);
    std::smatch m;
    if (std::regex_match(line, m, std::regex("<!--\\s*docs-test:\\s*skip\\s*(.*?)\\s*-->"))) {
      skip = m[1].str().empty() ? "marked skip" : m[1].str();
      continue;
    }
    if (!line.starts_with("```")) {
      if (!line.empty()) after_commands = false, skip.clear();
      continue;
    }
    const std::string info = trim(line.substr(3));
    std::vector<std::string> block;
    const int first = int(i) + 2;  // 1-based line of the block's first line
    for (++i; i < lines.size() && !trim(lines[i]).starts_with("```"); ++i) block.push_back(lines[i]);
    std::stringstream ss(info);
    std::string language, word, file;
    ss >> language;
    while (ss >> word)
      if (word.starts_with("file=")) file = word.substr(5);
    if (!file.empty()) {
      std::string contents;
      for (const auto& l : block) contents += l + "\n";
      steps.push_back({.file = std::pair(file, contents)});
      after_commands = false;
    } else if (language == "sh") {
      for (auto& c : parse_commands(block, first, skip)) steps.push_back({.command = c});
      after_commands = true;
    } else if (language == "text" && after_commands && !steps.empty() && steps.back().command) {
      for (const auto& l : block) steps.back().command->expected_output += l + "\n";
      after_commands = false;
    } else {
      after_commands = false;
    }
    skip.clear();
  }
  return steps;
}

// [SECTION] Running a file's commands

struct Output {
  int code = -1;
  std::string text;
  double seconds = 0;
};

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

class Scenario {
 public:
  explicit Scenario(const std::string& name) {
    root_ = fs::temp_directory_path() / ("ls_docs_" + name + "_" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "home" / "models");
    fs::create_directories(root_ / "bin");
    fs::create_directories(root_ / "repo");
    for (const char* dir : {"tests", "assets"}) fs::create_directory_symlink(kSource / dir, root_ / "repo" / dir);
    const char* binary = std::getenv("LS_APP_BINARY") ? std::getenv("LS_APP_BINARY") : LS_APP_BINARY;
    fs::create_symlink(fs::absolute(binary), root_ / "bin" / "lorastudio");
    if (fs::exists(kLlamaCompletion)) fs::create_symlink(kLlamaCompletion, root_ / "bin" / "llama-completion");
  }
  ~Scenario() { fs::remove_all(root_); }

  fs::path home() const { return root_ / "home"; }
  fs::path cwd() const { return root_ / "repo"; }

  // ~/models/NAME for every NAME the text mentions.
  void link_models(const std::string& text) {
    const std::regex model("~/models/([A-Za-z0-9._-]+)");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), model); it != std::sregex_iterator(); ++it) {
      const std::string name = (*it)[1];
      std::string lower = name;
      std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
      const fs::path link = home() / "models" / name;
      if (!fs::exists(link))
        fs::create_directory_symlink(kSource / "tests/fixtures/models" / (lower.find("llama") != std::string::npos ? "llama_tiny" : "qwen2_tiny"), link);
    }
  }

  // A .jsonl file the command names and nothing wrote: a copy of the demo data.
  void provide_data(const std::string& command) {
    const std::regex jsonl("([~A-Za-z0-9._/-]+\\.jsonl)\\b");
    for (auto it = std::sregex_iterator(command.begin(), command.end(), jsonl); it != std::sregex_iterator(); ++it) {
      std::string name = (*it)[1];
      fs::path path = name.starts_with("~/") ? home() / name.substr(2) : cwd() / name;
      if (fs::exists(path)) continue;
      fs::create_directories(path.parent_path());
      fs::copy_file(kSource / "assets/demo/tiny_chat.jsonl", path);
    }
  }

  void write(const std::string& name, const std::string& contents) {
    const fs::path path = name.starts_with("~/") ? home() / name.substr(2) : cwd() / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << contents;
  }

  // The command as the test runs it. Training, when it is to succeed: at most 2 steps of at most 2
  // sequences (the fixture model learns nothing more from many, and the test stays short); a --batch or
  // --demo command without --steps gets --steps 2, which also wins over a --config file's.
  static std::string stand_in(std::string command, int expect_code) {
    if (expect_code != 0) return command;
    if (command.find("--batch") == std::string::npos && command.find("--demo") == std::string::npos) return command;
    auto cap = [&](const std::string& option, int most, bool add) {
      const std::regex value(option + "([ =])(\\d+)");
      std::smatch m;
      if (!std::regex_search(command, m, value)) {
        if (add) command += " " + option + " " + std::to_string(most);
      } else if (std::stoi(m[2]) > most) {
        command = m.prefix().str() + option + m[1].str() + std::to_string(most) + m.suffix().str();
      }
    };
    cap("--steps", 2, true);
    cap("--batch-size", 2, false);
    return command;
  }

  Output run(const std::string& command) const {
    const std::string path = (root_ / "bin").string() + ":" + (std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin");
    const std::string shell = "cd " + shell_quote(cwd().string()) + " && env -u DISPLAY -u WAYLAND_DISPLAY -u XDG_DATA_HOME HOME=" +
                              shell_quote(home().string()) + " PATH=" + shell_quote(path) + " timeout 300 sh -c " +
                              shell_quote(command) + " </dev/null 2>&1";
    Output out;
    const auto t0 = std::chrono::steady_clock::now();
    FILE* p = popen(shell.c_str(), "r");
    if (!p) return out;
    std::array<char, 4096> buf;
    for (size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) out.text.append(buf.data(), n);
    const int status = pclose(p);
    out.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
  }

 private:
  fs::path root_;
};

bool binary_has(const std::string& option) {
  auto r = test::run_app({"--help"});
  return r.out.find(option) != std::string::npos;
}

std::vector<std::string> documented_files() {
  std::vector<std::string> files = {"README.md"};
  std::vector<std::string> docs;
  for (const auto& e : fs::directory_iterator(kSource / "docs"))
    if (e.path().extension() == ".md") docs.push_back("docs/" + e.path().filename().string());
  std::sort(docs.begin(), docs.end());
  files.insert(files.end(), docs.begin(), docs.end());
  return files;
}

// [SECTION] Tests

TEST(DocsParser, JoinsLinesDropsCommentsReadsExitCodesFilesAndOutputs) {
  const std::string md =
      "Some text.\n\n"
      "```jsonl file=data/bad.jsonl\n{\"text\": 1}\n```\n\n"
      "```sh\n"
      "lorastudio --batch --model ~/models/Qwen2.5-0.5B \\\n"
      "  --data data/bad.jsonl   # fails: exit code 1\n"
      "huggingface-cli download x   # '#' in a comment\n"
      "LORASTUDIO_DEVICE=0 lorastudio --devices\n"
      "lorastudio generate --prompt \"a # b\"  # the # inside quotes stays\n"
      "```\n\n"
      "```text\nlorastudio: data/bad.jsonl:1: \"text\" must be a string, got number\n```\n\n"
      "<!-- docs-test: skip needs a GPU -->\n"
      "```sh\nlorastudio --device nvidia --devices\n```\n"
      "```python\nimport torch\n```\n";
  const auto steps = parse_markdown(md);
  ASSERT_EQ(steps.size(), 6u);
  ASSERT_TRUE(steps[0].file);
  EXPECT_EQ(steps[0].file->first, "data/bad.jsonl");
  EXPECT_EQ(steps[0].file->second, "{\"text\": 1}\n");
  const Command& train = *steps[1].command;
  EXPECT_EQ(train.text, "lorastudio --batch --model ~/models/Qwen2.5-0.5B --data data/bad.jsonl");
  EXPECT_EQ(train.expect_code, 1);
  EXPECT_TRUE(train.skip.empty());
  EXPECT_EQ(train.line, 8);
  EXPECT_TRUE(train.expected_output.empty());
  EXPECT_EQ(steps[2].command->skip, "needs the network (the Hugging Face hub)");
  EXPECT_TRUE(steps[3].command->skip.empty()) << "VAR=value before lorastudio";
  EXPECT_EQ(steps[4].command->text, "lorastudio generate --prompt \"a # b\"");
  EXPECT_EQ(steps[4].command->expected_output, "lorastudio: data/bad.jsonl:1: \"text\" must be a string, got number\n");
  EXPECT_EQ(steps[5].command->skip, "needs a GPU");
}

class DocsCommands : public ::testing::TestWithParam<std::string> {};

TEST_P(DocsCommands, RunAsDocumented) {
  const std::string file = GetParam();
  const std::string markdown = read_text(kSource / file);
  ASSERT_FALSE(markdown.empty()) << file;
  std::string name = file;
  std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
  Scenario scenario(name);
  scenario.link_models(markdown);
  static const bool has_demo = binary_has("--demo");
  int ran = 0;
  for (const Step& step : parse_markdown(markdown)) {
    if (step.file) {
      scenario.write(step.file->first, step.file->second);
      continue;
    }
    const Command& c = *step.command;
    std::string skip = c.skip;
    if (skip.empty() && !has_demo && c.text.find("--demo") != std::string::npos) skip = "this build has no --demo yet";
    if (!skip.empty()) {
      std::printf("  skipped %s:%d: %s\n      (%s)\n", file.c_str(), c.line, c.text.c_str(), skip.c_str());
      continue;
    }
    if (c.expect_code == 0) scenario.provide_data(c.text);  // a failing example shows what its files do
    const std::string command = Scenario::stand_in(c.text, c.expect_code);
    const Output out = scenario.run(command);
    ++ran;
    std::printf("  ran %s:%d (exit %d, %.1f s): %s\n", file.c_str(), c.line, out.code, out.seconds, c.text.c_str());
    if (command != c.text) std::printf("      as: %s\n", command.c_str());
    EXPECT_EQ(out.code, c.expect_code) << file << ":" << c.line << ": " << c.text << "\n" << out.text;
    const auto printed = lines_of(out.text);
    for (const auto& want : lines_of(c.expected_output)) {
      if (trim(want).empty()) continue;
      const bool found = std::find(printed.begin(), printed.end(), want) != printed.end();
      EXPECT_TRUE(found) << file << ":" << c.line << ": the documented output line\n  " << want << "\nis not a line of what `" << c.text
          << "` printed:\n" << out.text;
    }
  }
  if (file != "docs/cli.md") {
    EXPECT_GT(ran, 0) << file << " documents no lorastudio command in a ```sh block";
  }
}

INSTANTIATE_TEST_SUITE_P(Files, DocsCommands, ::testing::ValuesIn(documented_files()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string n = param.param;
                           std::replace_if(n.begin(), n.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
                           return n;
                         });

}  // namespace
}  // namespace ls
