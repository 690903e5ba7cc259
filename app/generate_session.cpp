#include "generate_session.h"

#include <iostream>

#include "error.h"
#include "model/peft_adapter.h"

namespace ls::app {

namespace {
QuantType quant_of(const GenerateArgs& a) {
  const auto q = parse_quant(a.quantize);
  if (!q) throw Error("--quantize: \"" + a.quantize + "\" is not nf4, q8 or none");
  return *q;
}
}  // namespace

GenerateSession::GenerateSession(const GenerateArgs& a)
    : device({.select = a.device}),
      model(model::Model::load(device, a.model, quant_of(a))),
      files(infer::ChatModelFiles::load(a.model, model.config)) {
  for (const auto& w : files.warnings) std::cerr << "lorastudio: warning: " << w << "\n";
  if (!a.adapter.empty()) adapter = model::load_peft_adapter(device, model.config, a.adapter);
  if (a.ignore_eos) files.eos.clear();
}

DType GenerateSession::act(const GenerateArgs& a) const {
  if (a.act == "f32") return DType::f32;
  if (a.act == "f16") return DType::f16;
  return device.report().float16 && device.coopmat() ? DType::f16 : DType::f32;
}

infer::GenerateOptions generation_options(const GenerateArgs& a, const GenerateSession& s) {
  infer::GenerateOptions o;
  o.max_new_tokens = a.max_tokens;
  o.sampling = {.temperature = a.temperature, .top_k = a.top_k, .top_p = a.top_p, .min_p = a.min_p,
                .repetition_penalty = a.repetition_penalty, .seed = a.seed};
  infer::validate(o.sampling);
  o.stop_ids = s.files.eos;
  return o;
}

}  // namespace ls::app
