#include "model/gguf_export.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>

#include "error.h"
#include "model/config.h"
#include "model/gguf_hparams.h"
#include "model/gguf_names.h"
#include "model/gguf_quants.h"
#include "model/gguf_vocab.h"
#include "model/lora.h"
#include "model/merge.h"
#include "model/peft_adapter.h"
#include "model/safetensors.h"
#include "tensor/dtype.h"
#include "tensor/tensor.h"
#include "util/parallel.h"

namespace ls::model {
namespace {

namespace fs = std::filesystem;

constexpr size_t kSlabBytes = 4 << 20;  // bytes handed to the writer at a time

float element(const TensorInfo& t, size_t i) { return load_as_f32(t.bytes.data(), t.dtype, i); }

// Runs job(first, end) over [0, n) in contiguous pieces on up to one thread per core.
void parallel_rows(uint64_t n, const std::function<void(uint64_t, uint64_t)>& job) { parallel_for(n, job, 1); }

// Streams a [rows, cols] float tensor (rows reordered by `heads`, see gguf_names.h) as `type`; a
// quantized type's rows are quantized on all cores.
void stream_rows(const TensorInfo& t, uint64_t rows, uint64_t cols, uint32_t heads, gguf::TensorType type,
                 const gguf::ByteSink& sink, GgufValueMap map = {}) {
  const uint64_t row_bytes = gguf::tensor_bytes(type, std::vector<uint64_t>{cols}, t.name);
  const uint64_t slab_rows = std::clamp<uint64_t>(kSlabBytes / std::max<uint64_t>(row_bytes, 1), 1, rows);
  std::vector<std::byte> out(slab_rows * row_bytes);
  auto convert = [&](uint64_t r0, uint64_t first, uint64_t end) {
    std::vector<float> row(cols);
    for (uint64_t r = first; r < end; ++r) {
      const uint64_t src = gguf_source_row(r0 + r, rows, heads);
      for (uint64_t c = 0; c < cols; ++c) row[c] = element(t, src * cols + c);
      if (map.add != 0 || map.mul != 1)
        for (float& v : row) v = (v + map.add) * map.mul;
      std::byte* dst = out.data() + r * row_bytes;
      switch (type) {
        case gguf::TensorType::f32: std::memcpy(dst, row.data(), cols * 4); break;
        case gguf::TensorType::f16:
        case gguf::TensorType::bf16:
          for (uint64_t c = 0; c < cols; ++c) {
            const uint16_t h = type == gguf::TensorType::f16 ? f32_to_f16(row[c]) : f32_to_bf16(row[c]);
            std::memcpy(dst + 2 * c, &h, 2);
          }
          break;
        default: quantize_row(type, row.data(), cols, dst);
      }
    }
  };
  const bool quantized = gguf::type_traits(type).block > 1;
  for (uint64_t r0 = 0; r0 < rows; r0 += slab_rows) {
    const uint64_t n = std::min(slab_rows, rows - r0);
    if (quantized) parallel_rows(n, [&](uint64_t first, uint64_t end) { convert(r0, first, end); });
    else convert(r0, 0, n);
    sink(std::span(out).first(n * row_bytes));
  }
}

// One note per (wanted, written) pair of types: how many matrices fell back, and their row lengths.
std::vector<std::string> fallback_notes(GgufFileType type, const std::map<std::pair<gguf::TensorType, gguf::TensorType>,
                                                                          std::pair<int, std::set<uint64_t>>>& fell) {
  std::vector<std::string> notes;
  for (const auto& [types, what] : fell) {
    const auto& [count, widths] = what;
    std::string cols;
    for (uint64_t c : widths) cols += (cols.empty() ? "" : ", ") + std::to_string(c);
    const auto& wanted = gguf::type_traits(types.first);
    notes.push_back(std::to_string(count) + " matri" + (count == 1 ? "x" : "ces") + " of the " +
                    gguf_file_type_name(type) + " file written as " + gguf::type_traits(types.second).name +
                    " instead of " + wanted.name + ": their rows (" + cols + " values) are not whole " +
                    std::to_string(wanted.block) + "-value blocks (llama.cpp's quantizer does the same)");
  }
  return notes;
}

// export_model_gguf with general.name `model_name` (the base model's folder's for a merged model, not the temporary
// folder's).
std::vector<std::string> export_named_model_gguf(const fs::path& model_dir, const fs::path& out, GgufFileType type,
                                                 const gguf::Progress& progress, const std::string& model_name) {
  ModelConfig c = load_config(model_dir);
  check_gguf_expressible(c, model_dir / "config.json");
  const SafeTensors st = SafeTensors::open(model_dir);
  resolve_weight_names(c, [&](const std::string& name) { return st.find(name) != nullptr; });

  const std::string arch = gguf_architecture(c.arch);
  const bool type_70b = c.num_layers == 80 && (arch == "qwen2" || (arch == "llama" && c.num_kv_heads != c.num_heads));
  const GgufMixModel mix{.layers = c.num_layers, .tied_embeddings = c.tie_word_embeddings, .type_70b = type_70b};
  gguf::Writer w;
  set_gguf_hparams(w, c, model_dir, type, model_name);
  add_gguf_vocab(w, model_dir, c.vocab_size);
  if (const auto* tokens = std::get_if<std::vector<std::string>>(w.find("tokenizer.ggml.tokens")))
    w.set("general.name", gguf_model_name(model_name, *tokens));

  std::map<std::pair<gguf::TensorType, gguf::TensorType>, std::pair<int, std::set<uint64_t>>> fell_back;
  for (const TensorInfo& t : st.tensors()) {
    const std::optional<std::string> name = gguf_tensor_name(c, t.name);
    if (!name) continue;
    if (*name == "output.weight" && c.tie_word_embeddings) continue;  // llama.cpp reuses token_embd
    if (t.shape.empty() || t.shape.size() > 2)
      throw Error(t.file.string() + ": tensor \"" + t.name + "\" " + shape_string(t.shape) +
                  " is neither a vector nor a matrix");
    const bool matrix = t.shape.size() == 2;
    const uint64_t rows = matrix ? t.shape[0] : 1, cols = matrix ? t.shape[1] : t.shape[0];
    const uint32_t heads = gguf_permuted_heads(c, t.name);
    const GgufValueMap map = gguf_value_map(c, t.name);
    std::optional<gguf::TensorType> wanted;
    const gguf::TensorType tt = matrix ? gguf_matrix_type(type, *name, cols, mix, &wanted) : gguf::TensorType::f32;
    if (wanted) {
      auto& [count, widths] = fell_back[{*wanted, tt}];
      ++count;
      widths.insert(cols);
    }
    std::vector<uint64_t> ne = matrix ? std::vector<uint64_t>{cols, rows} : std::vector<uint64_t>{cols};
    if (!matrix && heads) {  // a q/k bias: its elements are the rows to permute
      w.add_tensor({*name, tt, ne, [&t, cols, heads, map](const gguf::ByteSink& sink) {
                      std::vector<float> v(cols);
                      for (uint64_t i = 0; i < cols; ++i) v[i] = element(t, gguf_source_row(i, cols, heads));
                      for (float& x : v) x = (x + map.add) * map.mul;
                      sink(std::as_bytes(std::span<const float>(v)));
                    }});
      continue;
    }
    w.add_tensor({*name, tt, ne, [&t, rows, cols, heads, tt, map](const gguf::ByteSink& sink) {
                    stream_rows(t, rows, cols, heads, tt, sink, map);
                  }});
  }
  for (GgufExtraTensor& e : gguf_extra_tensors(c)) {
    const uint64_t n = e.values.size();
    w.add_tensor({e.name, gguf::TensorType::f32, {n}, [values = std::move(e.values)](const gguf::ByteSink& sink) {
                    sink(std::as_bytes(std::span<const float>(values)));
                  }});
  }
  if (!out.parent_path().empty()) fs::create_directories(out.parent_path());
  w.write(out, progress);
  return fallback_notes(type, fell_back);
}

}  // namespace

std::vector<std::string> export_model_gguf(const fs::path& model_dir, const fs::path& out, GgufFileType type,
                                           const gguf::Progress& progress) {
  return export_named_model_gguf(model_dir, out, type, progress, gguf_folder_name(model_dir));
}

std::vector<std::string> export_merged_gguf(const fs::path& model_dir, const fs::path& adapter_dir, const fs::path& out,
                        GgufFileType type, const gguf::Progress& progress) {
  check_gguf_expressible(load_config(model_dir), model_dir / "config.json");  // before the merge's work
  fs::path tmp = out.parent_path() / (".merge-" + out.filename().string() + "-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::remove_all(tmp, ec);
  try {
    merge_adapter(model_dir, adapter_dir, tmp);
    auto notes = export_named_model_gguf(tmp, out, type, progress, gguf_folder_name(model_dir));
    fs::remove_all(tmp, ec);
    return notes;
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
}

void export_adapter_gguf(const fs::path& model_dir, const fs::path& adapter_dir, const fs::path& out,
                         const gguf::Progress& progress) {
  ModelConfig c = load_config(model_dir);
  check_gguf_expressible(c, model_dir / "config.json");
  if (c.multimodal) {  // which prefix the language model's tensors (and so the adapter's keys) have
    const SafeTensors model = SafeTensors::open(model_dir);
    resolve_weight_names(c, [&](const std::string& name) { return model.find(name) != nullptr; });
  }
  const LoraAdapter a = read_peft_adapter_config(adapter_dir);
  const fs::path weights = adapter_dir / "adapter_model.safetensors";
  const SafeTensors st = SafeTensors::open(weights);
  check_adapter_layer_prefix(st, c.weight_prefix, model_dir.string());

  gguf::Writer w;
  w.set("general.architecture", std::string(gguf_architecture(c.arch)));
  w.set("general.type", std::string("adapter"));
  w.set("general.name", gguf_folder_name(adapter_dir));
  w.set("adapter.type", std::string("lora"));
  w.set("adapter.lora.alpha", a.rslora ? a.alpha * std::sqrt(float(a.rank)) : a.alpha);

  for (uint32_t layer = 0; layer < c.num_layers; ++layer)
    for (LoraTarget t : a.targets) {
      const std::string ka = peft_key(layer, t, false, c.weight_prefix), kb = peft_key(layer, t, true, c.weight_prefix);
      const TensorInfo *ta = st.find(ka), *tb = st.find(kb);
      if (!ta && !tb) continue;  // a layer the adapter leaves alone (layers_to_transform)
      if (!ta || !tb) throw Error(weights.string() + ": \"" + (ta ? kb : ka) + "\" is missing (its pair is present)");
      const auto [rows_out, cols_in] = target_shape(c, t);
      if (ta->shape != std::vector<uint64_t>{a.rank, cols_in} || tb->shape != std::vector<uint64_t>{rows_out, a.rank})
        throw Error(weights.string() + ": \"" + ka + "\" " + shape_string(ta->shape) + " and \"" + kb + "\" " +
                    shape_string(tb->shape) + " do not fit the model's " + std::string(target_name(t)) + " [" +
                    std::to_string(rows_out) + ", " + std::to_string(cols_in) + "] with r = " +
                    std::to_string(a.rank) + " (an adapter for another model?)");
      const std::string base = "blk." + std::to_string(layer) + "." + std::string(gguf_target_name(t)) + ".weight";
      const uint64_t r = a.rank, in = cols_in, outn = rows_out;
      const uint32_t heads = gguf_permuted_heads(c, t);
      w.add_tensor({base + ".lora_a", gguf::TensorType::f32, {in, r}, [ta, r, in](const gguf::ByteSink& sink) {
                      stream_rows(*ta, r, in, 0, gguf::TensorType::f32, sink);
                    }});
      w.add_tensor({base + ".lora_b", gguf::TensorType::f32, {r, outn}, [tb, r, outn, heads](const gguf::ByteSink& sink) {
                      stream_rows(*tb, outn, r, heads, gguf::TensorType::f32, sink);
                    }});
    }
  if (w.tensor_count() == 0) throw Error(weights.string() + ": holds no LoRA matrices of the model's layers");
  if (!out.parent_path().empty()) fs::create_directories(out.parent_path());
  w.write(out, progress);
}

}  // namespace ls::model
