#include "ui/train_worker.h"

namespace ls::ui {

TrainWorker::~TrainWorker() {
  stop();
  if (thread_.joinable()) thread_.join();
}

bool TrainWorker::start(vk::Device& device, train::TrainConfig config, Callbacks callbacks) {
  if (active_) return false;
  if (thread_.joinable()) thread_.join();  // the previous run has ended
  control_.reset();
  on_paused_ = std::move(callbacks.on_paused);
  active_ = true;
  thread_ = std::thread([this, &device, config = std::move(config), callbacks = std::move(callbacks)] {
    run(device, config, callbacks);
    active_ = false;
  });
  return true;
}

void TrainWorker::run(vk::Device& device, const train::TrainConfig& config, const Callbacks& callbacks) {
  try {
    auto result = train::train(
        device, config,
        [&](const train::StepReport& r) {
          callbacks.on_step(r);
          return true;  // stopping goes through control_
        },
        &control_);
    callbacks.on_done(result);
  } catch (const std::exception& e) {
    callbacks.on_failed(e.what());
  }
}

}  // namespace ls::ui
