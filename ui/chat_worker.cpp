#include "ui/chat_worker.h"

#include <algorithm>

#include "model/peft_adapter.h"

namespace ls::ui {

uint64_t adapter_bytes(const model::LoraAdapter& adapter) {
  uint64_t n = 0;
  for (const auto& layer : adapter.layers)
    for (const auto& pair : layer)
      if (pair.defined()) n += pair.a.bytes() + pair.b.bytes();
  return n;
}

uint64_t kv_cache_bytes(const model::ModelConfig& c, uint32_t capacity, DType act) {
  return uint64_t(c.num_layers) * 2 * capacity * c.num_kv_heads * c.head_dim * dtype_size(act);
}

ChatWorker::ChatWorker(vk::Device& device, Callbacks callbacks)
    : device_(device), callbacks_(std::move(callbacks)), worker_([](const std::string&) {}) {}

ChatWorker::~ChatWorker() { stop_upto_ = UINT64_MAX; }

void ChatWorker::send(Request request) {
  const uint64_t id = ++last_request_;
  worker_.post([this, r = std::move(request), id] { generate(r, id); });
}

void ChatWorker::reset(bool release) {
  stop();
  worker_.post([this, release] {
    if (release) return release_all();
    for (auto& g : generators_)
      if (g) g->reset();
  });
}

void ChatWorker::release_all() {
  for (auto& g : generators_) g.reset();
  adapter_.reset();
  adapter_dir_.clear();
  model_.reset();
  callbacks_.on_memory(0, 0);
}

// Generators for the request's model and adapter, made anew when either changed.
void ChatWorker::prepare(const Request& r) {
  if (r.model != model_ || r.adapter != adapter_dir_) {
    for (auto& g : generators_) g.reset();
    if (r.model != model_) adapter_.reset();
    if (r.adapter != adapter_dir_ || !adapter_) {
      adapter_.reset();
      adapter_dir_.clear();
      if (!r.adapter.empty()) adapter_ = model::load_peft_adapter(device_, r.model->model.config, r.adapter);
      adapter_dir_ = r.adapter;
    }
    model_ = r.model;
  }
  const auto& config = model_->model.config;
  const bool f16 = device_.report().float16 && device_.coopmat();
  const infer::GeneratorOptions options{.context = std::min<uint32_t>(4096, config.max_position_embeddings),
                                        .act = f16 ? DType::f16 : DType::f32};
  for (int side : {kBase, kTuned}) {
    if (!r.wanted[side] || generators_[side]) continue;
    const model::LoraAdapter* a = side == kTuned && adapter_ ? &*adapter_ : nullptr;
    generators_[side] = std::make_unique<infer::Generator>(device_, model_->model, a, options);
  }
  uint64_t kv = 0;
  for (const auto& g : generators_)
    if (g) kv += kv_cache_bytes(config, g->capacity(), g->options().act);
  callbacks_.on_memory(kv, adapter_ ? adapter_bytes(*adapter_) : 0);
}

void ChatWorker::generate(const Request& r, uint64_t id) {
  try {
    prepare(r);
  } catch (const std::exception& e) {
    for (int side : {kBase, kTuned})
      if (r.wanted[side]) callbacks_.on_failed(r.turn, ChatSide(side), e.what());
    return;
  }
  for (int side : {kBase, kTuned}) {
    if (!r.wanted[side]) continue;
    const auto s = ChatSide(side);
    if (id <= stop_upto_) {
      callbacks_.on_failed(r.turn, s, "stopped");
      continue;
    }
    try {
      auto messages = r.messages[side];
      auto reply = infer::chat_turn(*generators_[side], model_->files, messages, r.options, [&](std::string_view piece) {
        callbacks_.on_piece(r.turn, s, std::string(piece));
        return id > stop_upto_;
      });
      if (id <= stop_upto_) reply.stats.stop_reason = "stopped";
      callbacks_.on_done(r.turn, s, reply);
    } catch (const std::exception& e) {
      generators_[side]->reset();  // the cache may hold a half-prefilled turn
      callbacks_.on_failed(r.turn, s, e.what());
    }
  }
}

}  // namespace ls::ui
