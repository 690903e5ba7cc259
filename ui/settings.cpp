#include "ui/settings.h"

#include <nlohmann/json.hpp>

namespace ls::ui {

namespace {

using nlohmann::json;

template <class T>
void get(const json& j, const char* key, T& out) {
  if (!j.is_object() || !j.contains(key)) return;
  try {
    out = j.at(key).get<T>();
  } catch (const json::exception&) {
  }
}

void get_path(const json& j, const char* key, std::filesystem::path& out) {
  std::string s = out.string();
  get(j, key, s);
  out = s;
}

}  // namespace

std::string settings_json(const UiSettings& s) {
  const auto& c = s.train.config;
  json targets = json::array();
  for (size_t i = 0; i < model::kLoraTargetCount; ++i)
    if (s.train.targets[i]) targets.push_back(std::string(model::kLoraTargetNames[i]));
  json train = {{"steps", c.steps}, {"epochs", c.data_options.epochs}, {"seed", c.seed}, {"profile", c.profile},
                {"rank", c.rank}, {"alpha", c.alpha}, {"rslora", c.rslora}, {"dropout", c.dropout},
                {"quantize", quant_name(c.quantize)}, {"targets", targets}, {"lr", c.schedule.lr}, {"schedule", s.train.schedule},
                {"warmup", c.schedule.warmup_steps}, {"weight_decay", c.optimizer.weight_decay},
                {"max_grad_norm", c.optimizer.max_grad_norm}, {"batch_size", c.batch_size},
                {"seq_len", c.data_options.max_seq_len}, {"grad_accum", c.grad_accum},
                {"train_on_prompt", c.data_options.train_on_prompt}, {"pack", c.data_options.pack}, {"grad_checkpoint", c.grad_checkpoint},
                {"skip_bad_lines", c.data_options.skip_bad_lines}, {"val_fraction", s.train.val_fraction},
                {"val_data", c.data_options.validation_file.string()}, {"val_every", c.val_every},
                {"save_every", c.save_every}};
  const auto& ch = s.chat;
  json chat = {{"temperature", ch.sampling.temperature}, {"top_k", ch.sampling.top_k}, {"top_p", ch.sampling.top_p},
               {"min_p", ch.sampling.min_p}, {"repetition_penalty", ch.sampling.repetition_penalty},
               {"seed", ch.sampling.seed}, {"max_tokens", ch.max_tokens}, {"use_adapter", ch.use_adapter},
               {"side_by_side", ch.side_by_side}, {"system", ch.system}};
  return json{{"train", train}, {"chat", chat}, {"model", s.model.string()}, {"data", s.data.string()},
              {"panels", s.panels}}.dump();
}

void read_settings(const std::string& text, UiSettings& s) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception&) {
    return;
  }
  if (!j.is_object()) return;
  if (j.contains("train")) {
    const json& t = j["train"];
    auto& c = s.train.config;
    get(t, "steps", c.steps);
    get(t, "epochs", c.data_options.epochs);
    get(t, "seed", c.seed);
    get(t, "profile", c.profile);
    get(t, "rank", c.rank);
    get(t, "alpha", c.alpha);
    get(t, "rslora", c.rslora);
    get(t, "dropout", c.dropout);
    std::string quant;
    get(t, "quantize", quant);
    c.quantize = parse_quant(quant).value_or(QuantType::none);
    std::vector<std::string> targets;
    get(t, "targets", targets);
    if (!targets.empty()) {
      for (auto& on : s.train.targets) on = false;
      for (const auto& name : targets)
        if (auto target = model::parse_target(name)) s.train.targets[size_t(*target)] = true;
    }
    get(t, "lr", c.schedule.lr);
    get(t, "schedule", s.train.schedule);
    if (s.train.schedule < 0 || s.train.schedule > 2) s.train.schedule = 1;
    get(t, "warmup", c.schedule.warmup_steps);
    get(t, "weight_decay", c.optimizer.weight_decay);
    get(t, "max_grad_norm", c.optimizer.max_grad_norm);
    get(t, "batch_size", c.batch_size);
    get(t, "seq_len", c.data_options.max_seq_len);
    get(t, "grad_accum", c.grad_accum);
    get(t, "train_on_prompt", c.data_options.train_on_prompt);
    get(t, "pack", c.data_options.pack);
    get(t, "grad_checkpoint", c.grad_checkpoint);
    get(t, "skip_bad_lines", c.data_options.skip_bad_lines);
    get(t, "val_fraction", s.train.val_fraction);
    get_path(t, "val_data", c.data_options.validation_file);
    get(t, "val_every", c.val_every);
    get(t, "save_every", c.save_every);
  }
  if (j.contains("chat")) {
    const json& t = j["chat"];
    auto& ch = s.chat;
    get(t, "temperature", ch.sampling.temperature);
    get(t, "top_k", ch.sampling.top_k);
    get(t, "top_p", ch.sampling.top_p);
    get(t, "min_p", ch.sampling.min_p);
    get(t, "repetition_penalty", ch.sampling.repetition_penalty);
    get(t, "seed", ch.sampling.seed);
    get(t, "max_tokens", ch.max_tokens);
    get(t, "use_adapter", ch.use_adapter);
    get(t, "side_by_side", ch.side_by_side);
    get(t, "system", ch.system);
  }
  get_path(j, "model", s.model);
  get_path(j, "data", s.data);
  if (j.contains("panels") && j["panels"].is_object())
    for (const auto& [key, open] : j["panels"].items())
      if (open.is_boolean()) s.panels[key] = open.get<bool>();
}

}  // namespace ls::ui
