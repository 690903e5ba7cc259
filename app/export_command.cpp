#include "export_command.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include <nlohmann/json.hpp>

#include "batch_command.h"
#include "error.h"
#include "model/gguf_export.h"
#include "model/gguf_folder.h"
#include "model/merge.h"
#include "store/run_store.h"
#include "trl_export.h"
#include "util/atomic_file.h"

namespace ls::app {

namespace fs = std::filesystem;

void add_export_options(CLI::App& cmd, ExportArgs& a) {
  cmd.add_flag("--merge", a.merge,
               "merge the adapter into the base weights and write a safetensors model folder (config, tokenizer "
               "files, model.safetensors or model-0000i-of-0000n shards + index) that transformers loads without PEFT");
  cmd.add_option("--trl", a.trl,
                 "write a PyTorch script (train_trl.py), its config (trl_config.json) and a README into this folder: "
                 "the run's hyperparameters under TRL's SFTTrainer + PEFT, for one GPU or `accelerate launch` on "
                 "many (the run from --run or --config)")
      ->type_name("DIR");
  cmd.add_option("--gguf", a.gguf,
                 "write for llama.cpp and Ollama into this folder: model-<type>.gguf (the model with the adapter "
                 "merged in, with its tokenizer and chat template), adapter.gguf (the adapter as a GGUF LoRA for "
                 "llama.cpp --lora or Ollama ADAPTER over the same base) and a Modelfile for `ollama create NAME -f "
                 "DIR/Modelfile`; Qwen2, Qwen3, Llama, Mistral, Gemma 3 and Phi-3 models")
      ->type_name("DIR");
  cmd.add_option("--gguf-type", a.gguf_type,
                 "--gguf: the merged model's weights: f16, bf16, q8_0 or q4_k_m (llama.cpp's Q4_K_M mix)")
      ->capture_default_str();
  cmd.add_option("--model", a.model, "the base: a Hugging Face model folder (config.json, *.safetensors)");
  cmd.add_option("--adapter", a.adapter, "PEFT LoRA adapter folder (adapter_config.json, adapter_model.safetensors)");
  cmd.add_option("--out", a.out, "folder to write (must be absent or empty unless --force)");
  cmd.add_flag("--force", a.force, "replace an existing --out folder (--trl: rewrite the files it writes there)");
  cmd.add_option("--max-shard-size", a.max_shard_size, "largest weight file, as transformers spells it (5GB, 500MB, 2GiB)")
      ->capture_default_str();
  cmd.add_option("--run", a.run,
                 "a run: its number in the run store or its folder (--out of --batch); --merge and --gguf record the "
                 "export under it, --trl reads its config");
  cmd.add_option("--config", a.config,
                 "--trl: the run's configuration from a file instead: a run folder's config.json or a --batch TOML file")
      ->type_name("FILE");
  cmd.add_option("--init-adapter", a.init_adapter,
                 "--trl: the script starts from this PEFT adapter (e.g. the run's adapter/) instead of a fresh LoRA")
      ->type_name("DIR");
  cmd.add_flag("--copy-data", a.copy_data,
               "--trl: copy the JSONL files (and --init-adapter) into the folder, so that it can move to another machine");
  cmd.add_option("--store", a.store, "run store (SQLite) path for --run (default: ~/.local/share/lorastudio/runs.sqlite)");
}

std::optional<uint64_t> parse_byte_size(std::string_view text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  std::string unit(end, text.data() + text.size());
  for (char& c : unit) c = char(std::toupper(static_cast<unsigned char>(c)));
  static constexpr std::pair<const char*, double> kUnits[] = {
      {"", 1},        {"B", 1},        {"KB", 1e3},        {"MB", 1e6},           {"GB", 1e9},
      {"TB", 1e12},   {"KIB", 1024.0}, {"MIB", 1048576.0}, {"GIB", 1073741824.0}, {"TIB", 1099511627776.0}};
  for (const auto& [name, factor] : kUnits) {
    if (unit != name) continue;
    const double bytes = std::floor(value * factor);
    if (!(bytes >= 1) || bytes > 1.8e19) return std::nullopt;
    return uint64_t(bytes);
  }
  return std::nullopt;
}

namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

store::RunStore open_store(const ExportArgs& a) {
  return store::RunStore(store::path_or_default(a.store));
}

// --run as a run of the store: a number, or the folder a run wrote into (its out_dir).
int64_t run_id(const ExportArgs& a, const store::RunStore& runs) {
  if (all_digits(a.run)) {
    const int64_t id = std::stoll(a.run);
    runs.run(id);  // throws naming the run when the store has no such run
    return id;
  }
  std::error_code ec;
  const fs::path folder = fs::weakly_canonical(fs::absolute(a.run), ec);
  for (const auto& r : runs.list_runs())
    if (!r.out_dir.empty() && fs::weakly_canonical(fs::absolute(r.out_dir), ec) == folder) return r.id;
  throw Error("--run " + a.run + ": no run of the run store wrote into this folder");
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open");
  return {std::istreambuf_iterator<char>(in), {}};
}

nlohmann::json parse_json(const std::string& text, const std::string& where) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": not valid JSON (" + e.what() + ")");
  }
}

int export_merged(const ExportArgs& a) {
  if (a.model.empty() || a.adapter.empty() || a.out.empty())
    throw Error("export --merge needs --model DIR, --adapter DIR and --out DIR");
  const auto shard = parse_byte_size(a.max_shard_size);
  if (!shard) throw Error("--max-shard-size: \"" + a.max_shard_size + "\" is not a size such as 5GB, 500MB or 2GiB");
  std::optional<store::RunStore> runs;
  int64_t run = -1;
  if (!a.run.empty()) {
    runs.emplace(open_store(a));
    run = run_id(a, *runs);
  }
  const auto r = model::merge_adapter(a.model, a.adapter, a.out, {.max_shard_bytes = *shard, .overwrite = a.force});
  if (runs) runs->add_export(run, fs::absolute(a.out).lexically_normal(), store::ExportFormat::merged);
  std::fprintf(stderr, "merged %s into %s: %zu weights merged, %zu copied; %zu weight file%s (%.1f MB) in %s\n",
               a.adapter.c_str(), a.model.c_str(), r.merged, r.copied, r.shards, r.shards == 1 ? "" : "s",
               double(r.bytes) / 1e6, a.out.c_str());
  return 0;
}

// Progress of one file on stderr, a line per tenth.
gguf::Progress progress_printer(const fs::path& file) {
  return [file, last = -1](uint64_t done, uint64_t total) mutable {
    const int tenth = total ? int(done * 10 / total) : 10;
    if (tenth == last) return;
    last = tenth;
    std::fprintf(stderr, "  %s: %d%%\n", file.filename().c_str(), tenth * 10);
  };
}

int export_gguf(const ExportArgs& a) {
  if (a.model.empty() || a.adapter.empty())
    throw Error("export --gguf DIR needs --model DIR (the base) and --adapter DIR (the PEFT adapter)");
  model::GgufFileType type;
  if (!model::parse_gguf_file_type(a.gguf_type, type))
    throw Error("--gguf-type: \"" + a.gguf_type + "\" is not one of f16, bf16, q8_0, q4_k_m");
  std::optional<store::RunStore> runs;
  int64_t run = -1;
  if (!a.run.empty()) {
    runs.emplace(open_store(a));
    run = run_id(a, *runs);
  }
  const fs::path dir = a.gguf;
  // A line when each file starts, then its progress a tenth at a time.
  fs::path current;
  gguf::Progress printer;
  const auto files = model::export_gguf_folder(
      a.model, a.adapter, dir, type, a.force, [&](const fs::path& file, uint64_t done, uint64_t total) {
        if (file != current) {
          current = file;
          printer = progress_printer(file);
          const std::string what = file.filename() == "adapter.gguf" ? "the adapter as a GGUF LoRA"
                                                                      : "the merged model, " + a.gguf_type;
          std::fprintf(stderr, "writing %s (%s)\n", file.c_str(), what.c_str());
        }
        if (total > 0) printer(done, total);
      });
  if (runs) runs->add_export(run, fs::absolute(dir).lexically_normal(), store::ExportFormat::gguf);
  for (const auto& note : files.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  std::fprintf(stderr, "wrote %s, adapter.gguf and Modelfile in %s; run: ollama create NAME -f %s\n",
               files.model.filename().c_str(), dir.c_str(), files.modelfile.c_str());
  return 0;
}

int export_trl(const ExportArgs& a) {
  if (a.run.empty() == a.config.empty())
    throw Error("export --trl needs the run: --run RUN (its number in the run store or its folder) or --config FILE");
  nlohmann::json config;
  std::string source;
  if (!a.config.empty()) {
    source = a.config;
    config = fs::path(a.config).extension() == ".toml" ? parse_json(resolved_config_json(a.config), a.config)
                                                        : parse_json(read_file(a.config), a.config);
  } else if (all_digits(a.run)) {
    const store::RunStore runs = open_store(a);
    const store::RunInfo info = runs.run(std::stoll(a.run));
    source = "run " + a.run + " of the run store";
    config = parse_json(info.config_json, source);
  } else {
    const fs::path file = fs::path(a.run) / "config.json";
    source = a.run;
    config = parse_json(read_file(file), file.string());
  }
  const auto written = write_trl_export(config, {.dir = a.trl, .init_adapter = a.init_adapter,
                                                 .copy_data = a.copy_data, .overwrite = a.force, .source = source});
  const auto& t = written["training"];
  std::fprintf(stderr, "wrote %s/train_trl.py, trl_config.json and README.md (from %s: LoRA r %s, lr %s, %s%s)\n",
               a.trl.c_str(), source.c_str(), written["lora"]["r"].dump().c_str(), t["learning_rate"].dump().c_str(),
               t["max_steps"].get<int64_t>() > 0 ? (t["max_steps"].dump() + " steps").c_str()
                                                  : (t["num_train_epochs"].dump() + " epochs").c_str(),
               written["init_adapter"].is_null() ? "" : ", from the adapter given");
  std::fprintf(stderr, "run it with: python3 %s/train_trl.py   (or: accelerate launch %s/train_trl.py)\n", a.trl.c_str(),
               a.trl.c_str());
  return 0;
}

}  // namespace

int run_export(const ExportArgs& a) {
  if (int(a.merge) + int(!a.trl.empty()) + int(!a.gguf.empty()) > 1)
    throw Error("export: --merge, --trl and --gguf are separate exports; give one at a time");
  if (a.merge) return export_merged(a);
  if (!a.gguf.empty()) return export_gguf(a);
  if (!a.trl.empty()) return export_trl(a);
  std::fprintf(stderr,
               "lorastudio: export needs --merge, --trl or --gguf: export --merge --model DIR --adapter DIR --out DIR "
               "writes the model with the adapter merged into its weights, a safetensors folder that transformers "
               "loads; export --trl DIR --run RUN writes a PyTorch script that trains with the run's hyperparameters "
               "under TRL + PEFT; export --gguf DIR --model DIR --adapter DIR writes GGUF files and a Modelfile for "
               "llama.cpp and Ollama (the adapter folder itself is already PEFT's format)\n");
  return 2;
}

}  // namespace ls::app
