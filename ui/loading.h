#pragma once
// What the loader thread reads for the views: a model with its tokenizer and chat template, measured for
// the Model panel, and a data set counted and previewed for the Data panel. Both throw ls::Error.
#include <filesystem>
#include <memory>

#include "train/dataset.h"
#include "ui/views.h"
#include "vk/device.h"

namespace ls::ui {

std::shared_ptr<const LoadedModel> load_model(vk::Device& device, const std::filesystem::path& dir);
DataView read_data(const std::filesystem::path& file, const LoadedModel& model, const train::DatasetOptions& options);

}  // namespace ls::ui
