#pragma once
// What the loader thread reads for the views: a model with its tokenizer and chat template, measured for
// the Model panel, and a data set counted and previewed for the Data panel. Both throw ls::Error.
#include <filesystem>
#include <memory>

#include "train/dataset.h"
#include "ui/views.h"
#include "vk/device.h"

namespace ls::ui {

// The model for the Model and Chat panels; quant: its projection weights packed (the Train panel's "Base
// weights", so that a model too big for the GPU in bf16 can be opened and chatted with as it was trained).
std::shared_ptr<const LoadedModel> load_model(vk::Device& device, const std::filesystem::path& dir,
                                              QuantType quant = QuantType::none);
DataView read_data(const std::filesystem::path& file, const LoadedModel& model, const train::DatasetOptions& options);

}  // namespace ls::ui
