#pragma once
// The training options' command-line names and one-line help texts, written once for both faces of
// the trainer: `lorastudio --batch` (CLI11 help) and the GUI's Train panel (tooltips).
namespace ls::train {

struct OptionHelp {
  const char* flag;  // the long option, e.g. "--lr"; also the TOML key without the dashes
  const char* text;
};

namespace option_help {
inline constexpr OptionHelp kModel{"--model", "Hugging Face model folder"};
inline constexpr OptionHelp kData{"--data", "training data, JSONL: {\"text\"}, {\"prompt\", \"completion\"} or {\"messages\"} per line"};
inline constexpr OptionHelp kOut{"--out", "run folder for the adapter, checkpoints, config and metrics"};
inline constexpr OptionHelp kValData{"--val-data", "validation JSONL"};
inline constexpr OptionHelp kValFraction{"--val-fraction", "hold out this share of --data for validation instead"};
inline constexpr OptionHelp kSteps{"--steps", "optimizer steps (0: as many as --epochs give)"};
inline constexpr OptionHelp kEpochs{"--epochs", "passes over the data"};
inline constexpr OptionHelp kLr{"--lr", "peak learning rate"};
inline constexpr OptionHelp kSchedule{"--schedule", "constant, linear or cosine decay after the warmup"};
inline constexpr OptionHelp kWarmup{"--warmup", "linear warmup steps"};
inline constexpr OptionHelp kRank{"--rank", "LoRA rank r"};
inline constexpr OptionHelp kAlpha{"--alpha", "LoRA alpha (scale alpha / r)"};
inline constexpr OptionHelp kRslora{"--rslora", "scale alpha / sqrt(r) (rsLoRA)"};
inline constexpr OptionHelp kQuantize{"--quantize", "keep the base model's projection weights in 4 bits (nf4: QLoRA, as bitsandbytes' NF4 with double quantization) or 8 bits (q8), dequantized by the kernels that read them; the adapter trains in f32 as with none, and loads on the unquantized base"};
inline constexpr OptionHelp kDropout{"--dropout", "LoRA dropout on each adapted projection's input, in [0, 1) (off for validation)"};
inline constexpr OptionHelp kTargets{"--targets", "projections to adapt, comma-separated: q_proj,k_proj,v_proj,o_proj,"
                                                  "gate_proj,up_proj,down_proj, or Phi-3's fused qkv_proj,gate_up_proj"
                                                  "; default q_proj,v_proj (qkv_proj on Phi-3)"};
inline constexpr OptionHelp kBatchSize{"--batch-size", "sequences per micro-batch"};
inline constexpr OptionHelp kSeqLen{"--seq-len", "longest sequence; longer examples are truncated"};
inline constexpr OptionHelp kGradAccum{"--grad-accum", "micro-batches per optimizer step"};
inline constexpr OptionHelp kWeightDecay{"--weight-decay", "AdamW weight decay"};
inline constexpr OptionHelp kMaxGradNorm{"--max-grad-norm", "clip the global gradient norm (0: off)"};
inline constexpr OptionHelp kValEvery{"--val-every", "steps between validation losses (0: at the end)"};
inline constexpr OptionHelp kSaveEvery{"--save-every", "steps between checkpoints (0: none; the adapter is written at the end and on Ctrl-C)"};
inline constexpr OptionHelp kSeed{"--seed", "seed of the LoRA initialisation and of the data order"};
inline constexpr OptionHelp kTrainOnPrompt{"--train-on-prompt", "also train on prompts and user turns"};
inline constexpr OptionHelp kGradCheckpoint{"--grad-checkpoint", "recompute each layer's activations in the backward: one layer's activations in GPU memory instead of all (long sequences, big batches), for about one more forward pass of time"};
inline constexpr OptionHelp kPack{"--pack", "pack short examples into full rows"};
inline constexpr OptionHelp kSkipBadLines{"--skip-bad-lines", "report and skip malformed JSONL lines"};
inline constexpr OptionHelp kOnNonFinite{"--on-nonfinite", "a step whose loss or gradient is NaN or infinite: stop (save the adapter as of the step before and fail the run) or skip (drop that step's update, count it, go on; stops after 20 skipped in a row)"};
inline constexpr OptionHelp kResume{"--resume", "continue from a checkpoint-N folder of a run with the same options"};
inline constexpr OptionHelp kStore{"--store", "run store (SQLite) path (default: ~/.local/share/lorastudio/runs.sqlite)"};
inline constexpr OptionHelp kPlan{"--plan", "print how much GPU memory the run needs, by category, against the device's memory (and what to change when it does not fit), then exit without training; with --data the run's own batches, else the most --seq-len allows"};
inline constexpr OptionHelp kProfile{"--profile", "store GPU time per op group every step in the run store (timestamps around every dispatch)"};
}  // namespace option_help

}  // namespace ls::train
