// lorastudio-bench: GPU timings of the engine. `micro` times single kernels (the seed documents'
// table plus the model's real shapes). `inference` times prefill and decode on a model
// folder; train arrives with the training issue.
#include <CLI/CLI.hpp>

#include <iostream>

#include "inference.h"
#include "micro.h"
#include "train_bench.h"
#include "vk/device.h"

int main(int argc, char** argv) {
  CLI::App app{"lorastudio-bench — GPU timings from timestamp queries"};
  app.require_subcommand(1);
  std::string device, json, filter;
  int iters = 200;
  auto* micro = app.add_subcommand("micro", "time single kernels: per-dispatch GPU time and submit+wait wall time");
  micro->add_option("--json", json, "also write the results as JSON to this file");
  micro->add_option("--filter", filter, "only the cases whose name contains this text");
  micro->add_option("--iters", iters, "ops recorded per case (median taken)")->check(CLI::Range(10, 100000));
  ls::bench::InferenceBenchOptions inf;
  auto* inference = app.add_subcommand("inference", "prefill and greedy decode tokens/s on a model folder");
  inference->add_option("--model", inf.model_dir, "Hugging Face model folder")->required();
  inference->add_option("--quantize", inf.quantize, "projection weights in nf4 or q8 (none: as loaded)");
  inference->add_option("--prefill", inf.prefill_tokens, "prefill length")->check(CLI::Range(1, 1 << 16));
  inference->add_option("--prompt", inf.prompt_tokens, "decode: prompt length")->check(CLI::Range(1, 1 << 16));
  inference->add_option("--new-tokens", inf.new_tokens, "decode: tokens timed")->check(CLI::Range(1, 1 << 16));
  inference->add_option("--context", inf.context,
                        "KV cache capacity in tokens (default: what the runs need; the app's chat keeps 4096)")
      ->check(CLI::Range(1, 1 << 20));
  inference->add_option("--act", inf.act, "activations: f32, f16 or auto")->check(CLI::IsMember({"f32", "f16", "auto"}));
  inference->add_option("--json", inf.json, "also write the results as JSON to this file");
  inference->add_option("--batches", inf.batches,
                        "also batched greedy generation, B prompts of --prompt tokens decoding --new-tokens each "
                        "together, at each B given (e.g. 1,4,16): aggregate tok/s")
      ->delimiter(',')
      ->check(CLI::Range(1, 256));
  ls::bench::TrainBenchOptions tr;
  auto* train = app.add_subcommand("train", "LoRA training steps/s on a model folder (random tokens)");
  train->add_option("--model", tr.model_dir, "Hugging Face model folder")->required();
  train->add_option("--quantize", tr.quantize, "the base's projection weights in nf4 or q8 (QLoRA)");
  train->add_option("--batch", tr.batch, "sequences per step")->check(CLI::Range(1, 1024));
  train->add_option("--seq", tr.seq, "tokens per sequence")->check(CLI::Range(2, 1 << 16));
  train->add_option("--rank", tr.rank, "LoRA rank")->check(CLI::Range(1, 1024));
  train->add_option("--targets", tr.targets, "adapted projections");
  train->add_flag("--grad-checkpoint", tr.grad_checkpoint, "recompute each layer's activations in the backward");
  train->add_option("--steps", tr.steps, "timed steps")->check(CLI::Range(1, 10000));
  train->add_option("--json", tr.json, "also write the results as JSON to this file");
  train->add_option("--trace", tr.trace, "write every dispatch of the profiled step (group, kernel, us) to this file");
  app.add_option("--device", device, "Vulkan device: number or part of the name (default: LORASTUDIO_DEVICE, else best)");
  CLI11_PARSE(app, argc, argv);
  try {
    ls::vk::Device dev({.select = device});
    std::cout << ls::vk::format_report(dev.report());
    if (*micro) return ls::bench::run_micro(dev, iters, json, filter);
    if (*inference) return ls::bench::run_inference(dev, inf);
    if (*train) return ls::bench::run_train(dev, tr);
  } catch (const std::exception& e) {
    std::cerr << "lorastudio-bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
