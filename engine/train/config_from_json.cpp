#include "train/config_from_json.h"

#include <nlohmann/json.hpp>

#include "error.h"

namespace ls::train {

TrainConfig config_from_json(std::string_view text, const std::string& source, TrainConfig c) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) throw Error(source + ": the run's configuration is not a JSON object");
  std::string key;
  try {
    auto get = [&](const char* name, auto& field) {
      key = name;
      if (j.contains(name)) field = j.at(name).get<std::remove_reference_t<decltype(field)>>();
    };
    auto get_path = [&](const char* name, std::filesystem::path& field) {
      key = name;
      if (j.contains(name)) field = j.at(name).get<std::string>();
    };
    auto& d = c.data_options;
    get_path("model", c.model);
    get_path("data", c.data);
    get_path("out", c.out);
    get_path("val_data", d.validation_file);
    get("val_fraction", d.validation_fraction);
    get("rank", c.rank);
    get("alpha", c.alpha);
    get("dropout", c.dropout);
    get("rslora", c.rslora);
    get("batch_size", c.batch_size);
    get("grad_accum", c.grad_accum);
    get("seq_len", d.max_seq_len);
    get("steps", c.steps);
    get("epochs", d.epochs);
    get("lr", c.schedule.lr);
    get("warmup", c.schedule.warmup_steps);
    get("beta1", c.optimizer.beta1);
    get("beta2", c.optimizer.beta2);
    get("eps", c.optimizer.eps);
    get("weight_decay", c.optimizer.weight_decay);
    get("max_grad_norm", c.optimizer.max_grad_norm);
    get("grad_checkpoint", c.grad_checkpoint);
    get("train_on_prompt", d.train_on_prompt);
    get("pack", d.pack);
    get("skip_bad_lines", d.skip_bad_lines);
    get("shuffle", d.shuffle);
    get("data_seed", d.seed);
    get("seed", c.seed);
    get("val_every", c.val_every);
    get("save_every", c.save_every);
    get_path("resume", c.resume);
    key = "schedule";
    if (j.contains(key)) {
      const auto name = j.at(key).get<std::string>();
      const auto kind = parse_schedule_kind(name);
      if (!kind) throw Error(source + ": \"schedule\": \"" + name + "\" is not constant, linear or cosine");
      c.schedule.kind = *kind;
    }
    key = "on_nonfinite";
    if (j.contains(key)) {
      const auto name = j.at(key).get<std::string>();
      const auto policy = parse_non_finite_policy(name);
      if (!policy) throw Error(source + ": \"on_nonfinite\": \"" + name + "\" is not stop or skip");
      c.on_non_finite = *policy;
    }
    key = "quantize";
    if (j.contains(key)) {
      const auto name = j.at(key).get<std::string>();
      const auto quant = parse_quant(name);
      if (!quant) throw Error(source + ": \"quantize\": \"" + name + "\" is not nf4, q8 or none");
      c.quantize = *quant;
    }
    key = "targets";
    if (j.contains(key)) {
      c.targets.clear();
      for (const auto& t : j.at(key)) {
        const auto name = t.get<std::string>();
        const auto target = model::parse_target(name);
        if (!target) throw Error(source + ": \"targets\": \"" + name + "\" is not a projection name");
        c.targets.push_back(*target);
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(source + ": \"" + key + "\": " + e.what());
  }
  return c;
}

}  // namespace ls::train
