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

// Every plain setting once, by its key: saving and reading both walk these (S is UiSettings or const
// UiSettings; visit(key, field)). The ones that need a conversion (quantize, targets, val_data) are apart.
template <class S, class Visit>
void train_fields(S& s, Visit&& visit) {
  auto& c = s.train.config;
  visit("steps", c.steps);
  visit("epochs", c.data_options.epochs);
  visit("seed", c.seed);
  visit("profile", c.profile);
  visit("rank", c.rank);
  visit("alpha", c.alpha);
  visit("rslora", c.rslora);
  visit("dropout", c.dropout);
  visit("lr", c.schedule.lr);
  visit("schedule", s.train.schedule);
  visit("warmup", c.schedule.warmup_steps);
  visit("weight_decay", c.optimizer.weight_decay);
  visit("max_grad_norm", c.optimizer.max_grad_norm);
  visit("batch_size", c.batch_size);
  visit("seq_len", c.data_options.max_seq_len);
  visit("grad_accum", c.grad_accum);
  visit("train_on_prompt", c.data_options.train_on_prompt);
  visit("pack", c.data_options.pack);
  visit("grad_checkpoint", c.grad_checkpoint);
  visit("skip_bad_lines", c.data_options.skip_bad_lines);
  visit("val_fraction", s.train.val_fraction);
  visit("val_every", c.val_every);
  visit("save_every", c.save_every);
}

template <class S, class Visit>
void chat_fields(S& s, Visit&& visit) {
  auto& ch = s.chat;
  visit("temperature", ch.sampling.temperature);
  visit("top_k", ch.sampling.top_k);
  visit("top_p", ch.sampling.top_p);
  visit("min_p", ch.sampling.min_p);
  visit("repetition_penalty", ch.sampling.repetition_penalty);
  visit("seed", ch.sampling.seed);
  visit("max_tokens", ch.max_tokens);
  visit("use_adapter", ch.use_adapter);
  visit("side_by_side", ch.side_by_side);
  visit("system", ch.system);
}

template <class S, class Visit>
void eval_fields(S& s, Visit&& visit) {
  visit("max_tokens", s.eval.max_tokens);
  visit("compare_base", s.eval.compare_base);
  visit("batch", s.eval.batch);
}

}  // namespace

std::string settings_json(const UiSettings& s) {
  const auto& c = s.train.config;
  json train = json::object(), chat = json::object(), eval = json::object();
  train_fields(s, [&](const char* key, const auto& value) { train[key] = value; });
  chat_fields(s, [&](const char* key, const auto& value) { chat[key] = value; });
  eval_fields(s, [&](const char* key, const auto& value) { eval[key] = value; });
  json targets = json::array();
  for (size_t i = 0; i < model::kLoraTargetCount; ++i)
    if (s.train.targets[i]) targets.push_back(std::string(model::kLoraTargetNames[i]));
  train["targets"] = targets;
  train["quantize"] = quant_name(c.quantize);
  train["val_data"] = c.data_options.validation_file.string();
  return json{{"train", train}, {"chat", chat}, {"eval", eval}, {"model", s.model.string()},
              {"data", s.data.string()}, {"panels", s.panels}}.dump();
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
    train_fields(s, [&](const char* key, auto& value) { get(t, key, value); });
    if (s.train.schedule < 0 || s.train.schedule > 2) s.train.schedule = 1;
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
    get_path(t, "val_data", c.data_options.validation_file);
  }
  if (j.contains("chat")) {
    const json& t = j["chat"];
    chat_fields(s, [&](const char* key, auto& value) { get(t, key, value); });
  }
  if (j.contains("eval")) {
    const EvalSettings defaults;
    EvalSettings& e = s.eval;
    eval_fields(s, [&](const char* key, auto& value) { get(j["eval"], key, value); });
    // The Evaluate panel's ranges (ui/eval_panel.cpp); out of them, the default.
    if (e.max_tokens < 1 || e.max_tokens > 8192) e.max_tokens = defaults.max_tokens;
    if (e.batch < 1 || e.batch > 64) e.batch = defaults.batch;
  }
  get_path(j, "model", s.model);
  get_path(j, "data", s.data);
  if (j.contains("panels") && j["panels"].is_object())
    for (const auto& [key, open] : j["panels"].items())
      if (open.is_boolean()) s.panels[key] = open.get<bool>();
}

}  // namespace ls::ui
