#pragma once
// "Try the demo" as a state machine. The demo model and data are made (or found) on the loader thread
// (make_demo, then ev::DemoReady); then each step starts once the one before is done: the model and the
// data open, training runs with the demo's options, and the base model and the adapter answer a held-out
// question side by side. The studio asks advance() once per frame what to do next, and does it.
#include <filesystem>

#include "demo/demo_data.h"
#include "ui/events.h"
#include "ui/views.h"

namespace ls::ui {

class DemoFlow {
 public:
  enum class Next { wait, open_data, start_training, chat };

  bool active() const { return step_ != Step::none; }
  void making() { step_ = Step::making; }  // make_demo was posted to the loader
  void ready(const ev::DemoReady& e);       // the studio opens the demo model next
  void cancel() { step_ = Step::none; }
  Next advance(const ModelView& model, const DataView& data, const TrainView& train, bool training);
  const demo::DemoData& data() const { return data_; }

 private:
  enum class Step { none, making, opening, training };
  Step step_ = Step::none;
  std::filesystem::path model_dir_;
  demo::DemoData data_;
  bool data_asked_ = false;
};

// On the loader thread: makes the demo model and data under `root` (or finds them intact), reporting
// progress as ev::Status; then ev::DemoReady, or ev::ModelFailed.
void make_demo(const std::filesystem::path& root, Events& events);
// The demo's options, as the Train and Chat panels show them: a few minutes on a CPU.
void use_demo_options(const ev::DemoReady& e, TrainSettings& train, ChatSettings& chat);

}  // namespace ls::ui
