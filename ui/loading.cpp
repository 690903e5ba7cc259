#include "ui/loading.h"

#include <algorithm>
#include <span>

namespace ls::ui {

namespace {

constexpr size_t kPreviewExamples = 6;

// Parameters, bytes and dtype of a model's weights: the tensors of its table (model/architecture.h); a
// quantized base shows its format.
void measure(LoadedModel& m) {
  const std::vector<model::ExpectedTensor> table = model::expected_tensors(m.model.config);
  for (const model::ExpectedTensor& e : table) m.parameters += e.numel();
  m.weight_bytes = m.model.weights.device_bytes();
  const std::string d = dtype_name(m.model.weights.embed.dtype());
  m.dtype = m.model.weights.quant != QuantType::none ? quant_name(m.model.weights.quant) : d;
  for (const model::ExpectedTensor& e : table) {
    const Tensor& t = model::weight_of(m.model.weights, e);
    if (t.defined() && t.numel() > 4096 && dtype_name(t.dtype()) != d) m.dtype = "mixed";
  }
}

// The example as pieces of text, each trained or not.
PreviewExample preview_of(const train::Example& ex, const tok::Tokenizer& tokenizer) {
  PreviewExample p{.line = ex.line, .tokens = ex.ids.size(), .trained = train::trained_count(ex)};
  size_t i = 0;
  while (i < ex.ids.size()) {
    size_t j = i;
    while (j < ex.ids.size() && ex.trained[j] == ex.trained[i]) ++j;
    p.pieces.push_back({tokenizer.decode(std::span(ex.ids).subspan(i, j - i)), ex.trained[i] != 0});
    i = j;
  }
  return p;
}

}  // namespace

std::shared_ptr<const LoadedModel> load_model(vk::Device& device, const std::filesystem::path& dir, QuantType quant) {
  auto m = model::Model::load(device, dir, quant);
  auto files = infer::ChatModelFiles::load(dir, m.config);
  auto loaded = std::make_shared<LoadedModel>(LoadedModel{std::move(m), std::move(files)});
  measure(*loaded);
  return loaded;
}

DataView read_data(const std::filesystem::path& file, const LoadedModel& model, const train::DatasetOptions& options) {
  const auto ds = train::load_dataset(file, model.files.tokenizer, model.files.chat, options);
  DataView v{.loaded = true, .path = file, .model_dir = model.model.dir};
  v.examples = ds.train_examples;
  v.validation_examples = ds.validation_examples;
  v.tokens = train::token_count(ds.train) + train::token_count(ds.validation);
  v.trained_tokens = train::trained_count(ds.train) + train::trained_count(ds.validation);
  v.longest = ds.longest;
  v.truncated = ds.truncated;
  v.problems = ds.warnings;
  for (size_t i = 0; i < std::min(kPreviewExamples, ds.train.size()); ++i)
    v.preview.push_back(preview_of(ds.train[i], model.files.tokenizer));
  return v;
}

}  // namespace ls::ui
