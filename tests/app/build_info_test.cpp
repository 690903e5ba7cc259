// `lorastudio --version` prints one line: the project version, the git commit and the build type. The commit
// comes from app/build_info.cmake, run here on scratch folders as the build runs it: a checkout's short hash,
// "-dirty" only when a tracked file changed (untracked files do not count), "unknown" outside git or in a
// folder below some other repository's top, and the generated file left untouched (same mtime) when nothing
// changed, so a build without a new commit recompiles nothing.
#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <regex>
#include <string>

#include "app/run_app.h"

namespace ls {
namespace {

namespace fs = std::filesystem;

struct Shell {
  int code = -1;
  std::string out;
};

Shell shell(const std::string& cmd) {
  Shell r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  for (size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(Version, OneLineWithVersionCommitAndBuildType) {
  auto r = test::run_app({"--version"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  std::smatch m;
  const std::regex line(R"(lorastudio (\S+) \(commit ([0-9a-f]{7,}(-dirty)?|unknown), (\w+) build\)\n)");
  ASSERT_TRUE(std::regex_match(r.out, m, line)) << r.out;
  EXPECT_EQ(m[1].str(), LS_VERSION);
  std::cout << "  " << r.out;
}

// A scratch folder, and build_info.cmake run on it as app/CMakeLists.txt runs it.
class BuildInfoScript : public ::testing::Test {
 protected:
  void SetUp() override {
    if (shell("git --version").code != 0) GTEST_SKIP() << "no git";
    dir_ = fs::temp_directory_path() / ("ls_build_info_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "src");
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path src() const { return dir_ / "src"; }
  fs::path output() const { return dir_ / "build_info.cpp"; }

  // The commit the generated file names, after running the script on `source`.
  std::string commit_of(const fs::path& source) {
    auto r = shell("cmake -DSOURCE_DIR='" + source.string() + "' -DOUTPUT='" + output().string() +
                   "' -DVERSION=1.2.3 -DBUILD_TYPE=Release -P '" LS_SOURCE_DIR "/app/build_info.cmake'");
    EXPECT_EQ(r.code, 0) << r.out;
    std::string text = read_text(output());
    EXPECT_NE(text.find(".version = \"1.2.3\""), std::string::npos) << text;
    EXPECT_NE(text.find(".build_type = \"Release\""), std::string::npos) << text;
    std::smatch m;
    if (!std::regex_search(text, m, std::regex(R"re(\.commit = "([^"]*)")re"))) return "(no .commit in " + text + ")";
    return m[1];
  }
  Shell git(const std::string& args) {
    return shell("git -c user.name=t -c user.email=t@example.org -c commit.gpgsign=false -c init.defaultBranch=main "
                 "-C '" + src().string() + "' " + args);
  }
  void write(const std::string& name, const std::string& text) { std::ofstream(src() / name) << text; }

  fs::path dir_;
};

TEST_F(BuildInfoScript, OutsideGitTheCommitIsUnknown) { EXPECT_EQ(commit_of(src()), "unknown"); }

TEST_F(BuildInfoScript, ShortHashDirtyOnlyWhenATrackedFileChanged) {
  write("a.txt", "one\n");
  ASSERT_EQ(git("init -q").code, 0);
  ASSERT_EQ(git("add a.txt").code, 0);
  ASSERT_EQ(git("commit -q -m first").code, 0);
  auto head = git("rev-parse --short HEAD");
  ASSERT_EQ(head.code, 0);
  std::string hash = head.out.substr(0, head.out.find('\n'));
  ASSERT_GE(hash.size(), 7u);

  EXPECT_EQ(commit_of(src()), hash);
  write("untracked.txt", "x\n");
  EXPECT_EQ(commit_of(src()), hash) << "an untracked file made the tree dirty";
  write("a.txt", "two\n");
  EXPECT_EQ(commit_of(src()), hash + "-dirty");
  ASSERT_EQ(git("commit -q -am second").code, 0);
  std::string second = git("rev-parse --short HEAD").out;
  second = second.substr(0, second.find('\n'));
  EXPECT_NE(second, hash);
  EXPECT_EQ(commit_of(src()), second);
}

TEST_F(BuildInfoScript, AFolderBelowAnotherRepositorysTopIsUnknown) {
  write("a.txt", "one\n");
  ASSERT_EQ(git("init -q").code, 0);
  ASSERT_EQ(git("add a.txt").code, 0);
  ASSERT_EQ(git("commit -q -m first").code, 0);
  fs::create_directories(src() / "unpacked_tarball");
  EXPECT_EQ(commit_of(src() / "unpacked_tarball"), "unknown");
}

TEST_F(BuildInfoScript, UnchangedStateLeavesTheFileUntouched) {
  commit_of(src());
  auto old_time = fs::file_time_type::clock::now() - std::chrono::hours(1);
  fs::last_write_time(output(), old_time);
  EXPECT_EQ(commit_of(src()), "unknown");
  EXPECT_EQ(fs::last_write_time(output()), old_time) << "rewritten with the same text: the app would recompile";
}

}  // namespace
}  // namespace ls
