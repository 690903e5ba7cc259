#pragma once
// Generates chat replies on its own thread: one Generator (KV cache and all) per side, the base model
// and the model with the adapter, kept between turns so that a conversation only prefills its new
// tokens (infer::chat_turn). Text arrives through the callbacks, on the chat thread, as it is produced.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "infer/chat_session.h"
#include "model/lora.h"
#include "ui/views.h"
#include "ui/worker.h"
#include "vk/device.h"

namespace ls::ui {

class ChatWorker {
 public:
  struct Request {
    std::shared_ptr<const LoadedModel> model;
    std::filesystem::path adapter;                  // for the tuned side; empty: the tuned side is the base
    std::vector<tok::ChatMessage> messages[2];      // per side, ending with the user's message
    bool wanted[2] = {false, false};                // which sides answer
    infer::GenerateOptions options;
    size_t turn = 0;
  };
  struct Callbacks {
    std::function<void(size_t turn, ChatSide, const std::string& piece)> on_piece;  // once per token
    std::function<void(size_t turn, ChatSide, const infer::Reply&)> on_done;
    std::function<void(size_t turn, ChatSide, const std::string& error)> on_failed;
    std::function<void(uint64_t kv_bytes, uint64_t lora_bytes)> on_memory;          // what it holds now
  };

  ChatWorker(vk::Device& device, Callbacks callbacks);
  ~ChatWorker();  // stops the reply being generated and joins

  void send(Request request);
  // The reply being generated (and any queued) ends at its next token.
  void stop() { stop_upto_ = last_request_.load(); }
  // Forgets the KV caches (a new conversation) and, with release, the model and adapter too.
  void reset(bool release = false);
  bool busy() const { return worker_.busy(); }

 private:
  void generate(const Request& r, uint64_t id);
  void prepare(const Request& r);
  void release_all();

  vk::Device& device_;
  Callbacks callbacks_;
  std::atomic<uint64_t> last_request_{0}, stop_upto_{0};
  // Owned by the chat thread.
  std::shared_ptr<const LoadedModel> model_;
  std::filesystem::path adapter_dir_;
  std::optional<model::LoraAdapter> adapter_;
  std::unique_ptr<infer::Generator> generators_[2];
  Worker worker_;  // last: its thread stops before the members above go
};

// Bytes of a LoRA adapter's A and B matrices (f32) on a model.
uint64_t adapter_bytes(const model::LoraAdapter& adapter);
// Bytes of a KV cache of `capacity` tokens in `act`.
uint64_t kv_cache_bytes(const model::ModelConfig& config, uint32_t capacity, DType act);

}  // namespace ls::ui
