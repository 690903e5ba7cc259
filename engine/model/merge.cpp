#include "model/merge.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "error.h"
#include "tensor/tensor.h"
#include "model/lora.h"
#include "model/peft_adapter.h"
#include "model/safetensors.h"
#include "util/atomic_file.h"
#include "util/mapped_file.h"

namespace ls::model {
namespace {

namespace fs = std::filesystem;

// PEFT's keys: base_model.model.<module>.lora_A.weight [r, in] and ...lora_B.weight [out, r], adapting
// the base's <module>.weight [out, in].
constexpr std::string_view kPeftPrefix = "base_model.model.";
constexpr std::string_view kSuffixA = ".lora_A.weight", kSuffixB = ".lora_B.weight";

// Files of a model folder that belong to a merged model besides its weights (merge.h).
constexpr std::string_view kSideFiles[] = {
    "config.json",      "generation_config.json", "tokenizer.json",     "tokenizer_config.json",
    "special_tokens_map.json", "added_tokens.json", "vocab.json",       "vocab.txt",
    "merges.txt",       "tokenizer.model",        "chat_template.jinja", "chat_template.json"};
constexpr std::string_view kSideFolder = "additional_chat_templates";

constexpr uint64_t kSlabBytes = 4 << 20;  // f32 bytes of W' made per slab of rows

std::string in_quotes(std::string_view s) { return "\"" + std::string(s) + "\""; }

// One adapted weight: W [out, in] of the base, A [r, in] and B [out, r] of the adapter.
struct Merge {
  const TensorInfo* w = nullptr;
  const TensorInfo* a = nullptr;
  const TensorInfo* b = nullptr;
};

// Pairs every tensor of the adapter with its base weight, checking names, ranks and shapes (merge.h).
// Keyed by the base tensor's name.
std::map<std::string, Merge> plan_merges(const SafeTensors& base, const SafeTensors& adapter, const LoraAdapter& config,
                                         const fs::path& model_dir) {
  const std::string where = adapter.path().string();
  auto fail = [&](const std::string& what) { throw Error(where + ": " + what); };
  std::map<std::string, Merge> merges;
  for (const TensorInfo& t : adapter.tensors()) {
    const bool is_a = t.name.ends_with(kSuffixA), is_b = t.name.ends_with(kSuffixB);
    if (!t.name.starts_with(kPeftPrefix) || !(is_a || is_b) || t.name.size() <= kPeftPrefix.size() + kSuffixA.size())
      fail("tensor " + in_quotes(t.name) +
           " is not a LoRA matrix (base_model.model.<module>.lora_A.weight or .lora_B.weight)");
    const std::string_view module =
        std::string_view(t.name).substr(kPeftPrefix.size(), t.name.size() - kPeftPrefix.size() - kSuffixA.size());
    const std::string_view leaf = module.substr(module.rfind('.') + 1);
    const auto target = parse_target(leaf);
    if (!target || std::find(config.targets.begin(), config.targets.end(), *target) == config.targets.end())
      fail("tensor " + in_quotes(t.name) + " adapts " + in_quotes(leaf) +
           ", which is not among the target_modules of adapter_config.json");
    if (t.dtype == DType::i32) fail("tensor " + in_quotes(t.name) + " is I32, not a float tensor");
    const std::string weight = std::string(module) + ".weight";
    Merge& m = merges[weight];
    (is_a ? m.a : m.b) = &t;
  }
  if (merges.empty()) fail("holds no LoRA matrices");

  for (auto& [weight, m] : merges) {
    const std::string prefix = std::string(kPeftPrefix) + weight.substr(0, weight.size() - 7);  // minus ".weight"
    if (!m.a || !m.b)
      fail(in_quotes(prefix + std::string(m.a ? kSuffixB : kSuffixA)) + " is missing (its pair is present)");
    const auto &a = m.a->shape, &b = m.b->shape;
    if (a.size() != 2 || b.size() != 2)
      fail(in_quotes(prefix) + ": lora_A " + shape_string(a) + " and lora_B " + shape_string(b) + " are not matrices");
    if (a[0] != b[1])
      fail(in_quotes(prefix) + ": rank mismatch: lora_A " + shape_string(a) + " has rank " + std::to_string(a[0]) +
           ", lora_B " + shape_string(b) + " has rank " + std::to_string(b[1]));
    if (a[0] != config.rank)
      fail(in_quotes(prefix) + ": rank mismatch: lora_A " + shape_string(a) + " and lora_B " + shape_string(b) +
           " have rank " + std::to_string(a[0]) + ", adapter_config.json says r = " + std::to_string(config.rank));
    m.w = base.find(weight);
    if (!m.w)
      fail(in_quotes(prefix) + " adapts " + in_quotes(weight) + ", which the model in " + model_dir.string() +
           " does not have (an adapter for another model?)");
    const auto& w = m.w->shape;
    if (w.size() != 2)
      fail(in_quotes(prefix) + " adapts " + in_quotes(weight) + " " + shape_string(w) + " of " + m.w->file.string() +
           ", which is not a matrix");
    if (m.w->dtype == DType::i32)
      fail(in_quotes(prefix) + " adapts " + in_quotes(weight) + " of " + m.w->file.string() +
           ", which is I32, not a float weight");
    if (a[1] != w[1] || b[0] != w[0])
      fail(in_quotes(prefix) + ": lora_A " + shape_string(a) + " and lora_B " + shape_string(b) + " do not fit " +
           in_quotes(weight) + " " + shape_string(w) + " of " + m.w->file.string() + " (A's in must be " +
           std::to_string(w[1]) + ", B's out " + std::to_string(w[0]) +
           "): an adapter for another model or architecture?");
  }
  return merges;
}

// Hands W' = W + scale·B·A to `sink` in W's dtype, a slab of rows at a time.
void write_merged(const Merge& m, double scale, const ByteSink& sink) {
  const size_t out = m.w->shape[0], in = m.w->shape[1], r = m.a->shape[0];
  const DType dtype = m.w->dtype;
  const std::vector<float> a = m.a->values_f32(), b = m.b->values_f32();
  const size_t slab_rows = std::clamp<size_t>(kSlabBytes / (4 * std::max<size_t>(in, 1)), 1, std::max<size_t>(out, 1));
  std::vector<double> acc(in);
  std::vector<std::byte> bytes(slab_rows * in * dtype_size(dtype));
  for (size_t row0 = 0; row0 < out; row0 += slab_rows) {
    const size_t rows = std::min(slab_rows, out - row0);
    for (size_t row = 0; row < rows; ++row) {
      const size_t o = row0 + row;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (size_t k = 0; k < r; ++k) {
        const double bk = b[o * r + k];
        const float* a_row = a.data() + k * in;
        for (size_t i = 0; i < in; ++i) acc[i] += bk * double(a_row[i]);
      }
      for (size_t i = 0; i < in; ++i) {
        const float w = load_as_f32(m.w->bytes.data(), dtype, o * in + i);
        store_from_f32(bytes.data(), dtype, row * in + i, w + float(scale * acc[i]));
      }
    }
    sink(std::span(bytes).first(rows * in * dtype_size(dtype)));
  }
}

// The base's tensors in their order on disk: by file (as opened), then by offset in the file.
std::vector<const TensorInfo*> in_file_order(const SafeTensors& st) {
  std::map<fs::path, size_t> file_index;
  for (const MappedFile& f : st.files()) file_index.emplace(f.path(), file_index.size());
  std::vector<const TensorInfo*> order;
  for (const TensorInfo& t : st.tensors()) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(), [&](const TensorInfo* x, const TensorInfo* y) {
    const size_t fx = file_index.at(x->file), fy = file_index.at(y->file);
    return fx != fy ? fx < fy : std::less<const std::byte*>()(x->bytes.data(), y->bytes.data());
  });
  return order;
}

// transformers' split (huggingface_hub split_torch_state_dict_into_shards): in order, a new shard when the
// next tensor would pass the limit.
std::vector<std::vector<const TensorInfo*>> split_into_shards(const std::vector<const TensorInfo*>& order,
                                                              uint64_t max_bytes) {
  std::vector<std::vector<const TensorInfo*>> shards(1);
  uint64_t size = 0;
  for (const TensorInfo* t : order) {
    if (!shards.back().empty() && size + t->bytes.size() > max_bytes) {
      shards.emplace_back();
      size = 0;
    }
    shards.back().push_back(t);
    size += t->bytes.size();
  }
  return shards;
}

std::string read_file(const fs::path& path) {
  MappedFile f(path);
  return {reinterpret_cast<const char*>(f.bytes().data()), f.size()};
}

void fsync_folder(const fs::path& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

// Copies the side files of model_dir (kSideFiles, LICENSE*, NOTICE*, additional_chat_templates/) into dst.
void copy_side_files(const fs::path& model_dir, const fs::path& dst) {
  for (const auto& entry : fs::directory_iterator(model_dir)) {
    const std::string name = entry.path().filename().string();
    const bool listed = std::find(std::begin(kSideFiles), std::end(kSideFiles), name) != std::end(kSideFiles);
    if ((listed || name.starts_with("LICENSE") || name.starts_with("NOTICE")) && entry.is_regular_file()) {
      write_file_atomically(dst / name, read_file(entry.path()));
    } else if (name == kSideFolder && entry.is_directory()) {
      for (const auto& sub : fs::recursive_directory_iterator(entry.path())) {
        const fs::path to = dst / name / fs::relative(sub.path(), entry.path());
        if (sub.is_directory()) fs::create_directories(to);
        else if (sub.is_regular_file()) {
          fs::create_directories(to.parent_path());
          write_file_atomically(to, read_file(sub.path()));
        }
      }
    }
  }
}

// Is `path` the folder `dir` or inside it (after resolving links and "..")?
bool is_within(const fs::path& path, const fs::path& dir) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(path), ec), d = fs::weakly_canonical(fs::absolute(dir), ec);
  const fs::path rel = p.lexically_relative(d);
  return !rel.empty() && *rel.begin() != "..";
}

// "out/" as "out", so that out + ".tmp-<pid>" is a sibling.
fs::path without_trailing_slash(const fs::path& p) {
  fs::path n = p.lexically_normal();
  return n.has_parent_path() && !n.has_filename() ? n.parent_path() : n;
}

}  // namespace

MergeReport merge_adapter(const fs::path& model_dir, const fs::path& adapter_dir, const fs::path& out_dir_in,
                          const MergeOptions& options) {
  std::error_code ec;
  // Inputs, all checked before anything is written.
  if (!fs::is_directory(model_dir, ec)) throw Error(model_dir.string() + ": the model folder does not exist");
  if (!fs::is_regular_file(model_dir / "config.json", ec))
    throw Error((model_dir / "config.json").string() + ": missing (a Hugging Face model folder has one)");
  const LoraAdapter config = read_peft_adapter_config(adapter_dir);
  const fs::path adapter_file = adapter_dir / "adapter_model.safetensors";
  if (!fs::is_regular_file(adapter_file, ec))
    throw Error(adapter_file.string() + ": missing (PEFT writes the adapter weights there)");
  if (options.max_shard_bytes == 0) throw Error("merge: the largest shard size must be positive");
  const SafeTensors base = SafeTensors::open(model_dir);
  const SafeTensors adapter = SafeTensors::open(adapter_file);
  for (const TensorInfo& t : base.tensors())  // the layers' prefix the model's own weights have
    if (const auto prefix = layer_prefix(t.name)) {
      check_adapter_layer_prefix(adapter, *prefix, model_dir.string());
      break;
    }
  const std::map<std::string, Merge> merges = plan_merges(base, adapter, config, model_dir);
  const double scale = config.rslora ? double(config.alpha) / std::sqrt(double(config.rank))
                                     : double(config.alpha) / double(config.rank);

  // The output folder.
  const fs::path out_dir = without_trailing_slash(out_dir_in);
  const std::string where = out_dir.string();
  if (is_within(model_dir, out_dir) || is_within(adapter_dir, out_dir))
    throw Error(where + ": the output folder holds the model or the adapter; choose another one");
  const bool exists = fs::exists(out_dir, ec);
  if (exists && !fs::is_directory(out_dir, ec)) throw Error(where + ": exists and is not a folder");
  const bool replace = exists && !fs::is_empty(out_dir, ec);
  if (replace && !options.overwrite)
    throw Error(where + ": exists and is not empty (--force replaces it)");
  if (out_dir.has_parent_path()) {
    fs::create_directories(out_dir.parent_path(), ec);
    if (ec) throw Error(where + ": cannot create its parent folder (" + ec.message() + ")");
  }
  fs::path tmp = out_dir;
  tmp += ".tmp-" + std::to_string(::getpid());
  fs::remove_all(tmp, ec);
  if (!fs::create_directory(tmp, ec)) throw Error(tmp.string() + ": cannot create (" + ec.message() + ")");

  MergeReport report;
  try {
    copy_side_files(model_dir, tmp);
    std::map<std::string, std::string> metadata = base.metadata();
    metadata["format"] = "pt";
    const auto shards = split_into_shards(in_file_order(base), options.max_shard_bytes);
    nlohmann::json weight_map = nlohmann::json::object();
    for (size_t s = 0; s < shards.size(); ++s) {
      char name[64];
      std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", s + 1, shards.size());
      const std::string file = shards.size() == 1 ? "model.safetensors" : name;
      std::vector<TensorToStream> tensors;
      for (const TensorInfo* t : shards[s]) {
        auto it = merges.find(t->name);
        std::function<void(const ByteSink&)> write;
        if (it != merges.end()) {
          write = [&m = it->second, scale](const ByteSink& sink) { write_merged(m, scale, sink); };
          ++report.merged;
        } else {
          write = [t](const ByteSink& sink) { sink(t->bytes); };
          ++report.copied;
        }
        tensors.push_back({.name = t->name, .dtype = t->dtype, .shape = t->shape, .write = std::move(write)});
        weight_map[t->name] = file;
        report.bytes += t->bytes.size();
      }
      write_safetensors_streamed(tmp / file, tensors, metadata);
    }
    report.shards = shards.size();
    if (shards.size() > 1) {
      const nlohmann::json index = {{"metadata", {{"total_size", report.bytes}}}, {"weight_map", weight_map}};
      write_file_atomically(tmp / "model.safetensors.index.json", index.dump(2) + "\n");
    }

    // Into place: an empty (or absent) out_dir is replaced by the rename itself; a full one moves aside first.
    if (replace) {
      fs::path old = out_dir;
      old += ".old-" + std::to_string(::getpid());
      fs::remove_all(old, ec);
      fs::rename(out_dir, old, ec);
      if (ec) throw Error(where + ": cannot move the old folder aside (" + ec.message() + ")");
      fs::rename(tmp, out_dir, ec);
      if (ec) {
        std::error_code ignored;
        fs::rename(old, out_dir, ignored);
        throw Error(where + ": cannot rename " + tmp.string() + " into place (" + ec.message() + ")");
      }
      fs::remove_all(old, ec);
    } else {
      fs::rename(tmp, out_dir, ec);
      if (ec) throw Error(where + ": cannot rename " + tmp.string() + " into place (" + ec.message() + ")");
    }
  } catch (const Error& e) {  // a full disk, say: the partial folder goes, the old one stays
    fs::remove_all(tmp, ec);
    throw Error(std::string(e.what()) + "; the merged model was not written" +
                (replace ? " and " + where + " is as it was before" : ""));
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  fsync_folder(out_dir.parent_path());
  return report;
}

}  // namespace ls::model
