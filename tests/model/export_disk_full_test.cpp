// A full disk during an export (docs/reliability.md "A full disk"), simulated with util/atomic_file.h's
// simulate_full_disk_after (every write through AtomicFileWriter fails with ENOSPC once a byte budget is
// spent, the last one after writing what fitted), at several budgets from nothing to most of the export:
// - merge_adapter over an existing folder (--force): the error names the file, says the disk is full and
//   that the folder is as it was; the folder's files keep their bytes and their inodes (never replaced);
//   no temporary folder is left beside it; with the disk freed, the same merge succeeds;
// - export_gguf_folder over an existing folder: files are replaced one by one, each whole: those before the
//   failing one are new (a new inode, the bytes of a fresh export), the failing one and those after it keep
//   their inode and bytes, and the message lists both groups; no ".merge-" folder or temporary file is left;
// - save_peft_adapter into an existing folder and into a new one: the existing folder keeps both files
//   (bytes and inodes), a new one is not created, and no ".partial." folder is left, down to a disk that
//   runs out at the last byte.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <set>

#include "model/gguf_folder.h"
#include "model/lora_init.h"
#include "model/merge.h"
#include "model/model_files.h"
#include "model/peft_adapter.h"
#include "support/testing.h"
#include "util/atomic_file.h"

namespace ls::model {
namespace {

namespace fs = std::filesystem;
using test::read_text;
using test::TempDir;

const fs::path kModel = test::fixtures_dir() / "models/qwen2_tiny";
const fs::path kAdapter = kModel / "adapter";

// Turns the simulated full disk off when the test ends, however it ends.
struct FullDiskAfter {
  explicit FullDiskAfter(uint64_t bytes) { simulate_full_disk_after(bytes); }
  ~FullDiskAfter() { simulate_full_disk_after(std::nullopt); }
  FullDiskAfter(const FullDiskAfter&) = delete;
  FullDiskAfter& operator=(const FullDiskAfter&) = delete;
};

struct FileState {
  std::string bytes;
  ino_t inode = 0;
  bool operator==(const FileState&) const = default;
};

// Every regular file under `dir`, by relative path.
std::map<std::string, FileState> snapshot(const fs::path& dir) {
  std::map<std::string, FileState> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    struct stat st {};
    ::stat(e.path().c_str(), &st);
    files[fs::relative(e.path(), dir).string()] = {read_text(e.path()), st.st_ino};
  }
  return files;
}

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

// The message of the ls::Error f throws, or "" when it throws none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

constexpr uint64_t kBudgets[] = {0, 1, 4096, 40000, 300000};

TEST(ExportDiskFull, MergeLeavesTheOldFolderAsItWas) {
  TempDir tmp;
  const fs::path out = tmp / "merged";
  merge_adapter(kModel, kAdapter, out);
  const auto before = snapshot(out);
  const auto listing = names_in(tmp.path());
  for (uint64_t budget : kBudgets) {
    SCOPED_TRACE("disk full after " + std::to_string(budget) + " bytes");
    std::string message;
    {
      FullDiskAfter full(budget);
      message = error_of([&] { merge_adapter(kModel, kAdapter, out, {.overwrite = true}); });
    }
    EXPECT_NE(message.find("No space left on device"), std::string::npos) << message;
    EXPECT_NE(message.find("the disk is full"), std::string::npos) << message;
    EXPECT_NE(message.find(out.string() + " is as it was before"), std::string::npos) << message;
    EXPECT_TRUE(snapshot(out) == before);
    EXPECT_EQ(names_in(tmp.path()), listing);
  }
  EXPECT_NO_THROW(merge_adapter(kModel, kAdapter, out, {.overwrite = true}));  // the disk freed
}

TEST(ExportDiskFull, GgufFolderReplacesFilesWholeOrNotAtAll) {
  TempDir tmp;
  const fs::path out = tmp / "gguf";
  const GgufFolder files = export_gguf_folder(kModel, kAdapter, out, GgufFileType::f16);
  const auto before = snapshot(out);
  ASSERT_EQ(before.size(), 3u);
  const auto listing = names_in(tmp.path());
  const std::string adapter = files.adapter.filename().string(), model = files.model.filename().string(),
                    modelfile = files.modelfile.filename().string();
  const uint64_t adapter_size = fs::file_size(files.adapter);
  for (uint64_t budget : {uint64_t(0), uint64_t(1000), adapter_size + 1000}) {
    SCOPED_TRACE("disk full after " + std::to_string(budget) + " bytes");
    std::string message;
    {
      FullDiskAfter full(budget);
      message = error_of([&] { export_gguf_folder(kModel, kAdapter, out, GgufFileType::f16, true); });
    }
    EXPECT_NE(message.find("No space left on device"), std::string::npos) << message;
    const auto after = snapshot(out);
    ASSERT_EQ(after.size(), 3u);
    EXPECT_EQ(names_in(tmp.path()), listing);
    for (const auto& [name, state] : after) EXPECT_EQ(state.bytes, before.at(name).bytes) << name;  // same inputs
    EXPECT_EQ(after.at(model).inode, before.at(model).inode);
    EXPECT_EQ(after.at(modelfile).inode, before.at(modelfile).inode);
    if (budget < adapter_size) {
      EXPECT_EQ(after.at(adapter).inode, before.at(adapter).inode);
      EXPECT_NE(message.find("left as they were: " + adapter + ", " + model + ", " + modelfile), std::string::npos)
          << message;
    } else {
      EXPECT_NE(after.at(adapter).inode, before.at(adapter).inode);  // written anew, whole
      EXPECT_NE(message.find("written anew: " + adapter + "; left as they were: " + model + ", " + modelfile),
                std::string::npos) << message;
    }
  }
}

class ExportDiskFullPeft : public test::GpuTest {};

TEST_F(ExportDiskFullPeft, AdapterFolderStaysAsItWasAndANewOneIsNotCreated) {
  TempDir tmp;
  const ModelConfig config = load_config(kModel);
  const auto targets = {LoraTarget::q_proj, LoraTarget::v_proj};
  const LoraAdapter first = init_lora(dev(), config, targets, 4, 8, false, 0, 1);
  const LoraAdapter second = init_lora(dev(), config, {LoraTarget::k_proj}, 2, 4, false, 0, 2);
  const fs::path dir = tmp / "adapter", fresh = tmp / "fresh";
  save_peft_adapter(first, config, dir, kModel.string());
  const auto before = snapshot(dir);
  ASSERT_EQ(before.size(), 2u);
  // The bytes `second` takes, both files: the last budget runs out at the last byte of adapter_config.json.
  uint64_t total = 0;
  {
    TempDir scratch;
    save_peft_adapter(second, config, scratch / "a", kModel.string());
    for (const auto& [name, state] : snapshot(scratch / "a")) total += state.bytes.size();
  }
  const auto listing = names_in(tmp.path());
  for (uint64_t budget : {uint64_t(0), uint64_t(100), total - 1}) {
    SCOPED_TRACE("disk full after " + std::to_string(budget) + " bytes");
    std::string message, fresh_message;
    {
      FullDiskAfter full(budget);
      message = error_of([&] { save_peft_adapter(second, config, dir, kModel.string()); });
    }
    {
      FullDiskAfter full(budget);
      fresh_message = error_of([&] { save_peft_adapter(second, config, fresh, kModel.string()); });
    }
    EXPECT_NE(message.find("No space left on device"), std::string::npos) << message;
    EXPECT_NE(message.find("the adapter was not saved and " + dir.string() + " is as it was before"),
              std::string::npos) << message;
    EXPECT_NE(fresh_message.find("the adapter was not saved"), std::string::npos) << fresh_message;
    EXPECT_TRUE(snapshot(dir) == before);
    EXPECT_EQ(names_in(tmp.path()), listing);  // no "fresh", no ".partial." folder
  }
  save_peft_adapter(second, config, dir, kModel.string());  // the disk freed
  EXPECT_FALSE(snapshot(dir) == before);
}

}  // namespace
}  // namespace ls::model
