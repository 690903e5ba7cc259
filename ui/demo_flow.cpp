#include "ui/demo_flow.h"

#include <string>
#include <string_view>

#include "demo/demo_model.h"

namespace ls::ui {

void DemoFlow::ready(const ev::DemoReady& e) {
  model_dir_ = e.model_dir;
  data_ = e.data;
  step_ = Step::opening;
  data_asked_ = false;
}

// Each step waits for the one before.
DemoFlow::Next DemoFlow::advance(const ModelView& model, const DataView& data, const TrainView& train, bool training) {
  switch (step_) {
    case Step::none: return Next::wait;
    case Step::making:
      if (!model.loading) step_ = Step::none;  // ev::ModelFailed: its dialog says why
      return Next::wait;
    case Step::opening: {
      if (model.loading || data.loading) return Next::wait;
      if (!model.loaded || model.loaded->model.dir != model_dir_) {
        step_ = Step::none;  // the model did not load (a dialog says why)
        return Next::wait;
      }
      const bool data_ready = data.loaded && data.path == data_.train && data.model_dir == model_dir_;
      if (data_ready) {
        step_ = Step::training;  // the studio cancels if training does not start
        return Next::start_training;
      }
      if (data_asked_) {
        step_ = Step::none;  // the data did not load
        return Next::wait;
      }
      data_asked_ = true;
      return Next::open_data;
    }
    case Step::training:
      if (training) return Next::wait;
      step_ = Step::none;
      return train.state == TrainState::finished || train.state == TrainState::stopped ? Next::chat : Next::wait;
  }
  return Next::wait;
}

void make_demo(const std::filesystem::path& root, Events& events) {
  try {
    int shown = -1;
    auto made = demo::ensure_demo_model(root, [&](std::string_view stage, double fraction) {
      const int percent = int(fraction * 100 + 0.5);
      if (percent / 10 == shown / 10) return;
      shown = percent;
      events.push(ev::Status{"Making the demo model (first use): " + std::string(stage) + " " + std::to_string(percent) + "%"});
    });
    events.push(ev::DemoReady{made.dir, demo::ensure_demo_data(root)});
  } catch (const std::exception& e) {
    events.push(ev::ModelFailed{root / demo::kDemoModelFolder, e.what()});
  }
}

void use_demo_options(const ev::DemoReady& e, TrainSettings& train, ChatSettings& chat) {
  const auto c = demo::demo_train_config(e.model_dir, e.data, demo::kDemoSteps);
  train.config = c;
  for (size_t i = 0; i < model::kLoraTargetCount; ++i) train.targets[i] = false;
  for (auto t : c.targets) train.targets[size_t(t)] = true;
  train.schedule = int(c.schedule.kind);
  train.val_fraction = 0;
  chat.side_by_side = true;
  chat.sampling.temperature = 0;  // greedy: the most likely answer of each side
  chat.max_tokens = 48;
}

}  // namespace ls::ui
