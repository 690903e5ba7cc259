#include "export_command.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "error.h"
#include "model/merge.h"
#include "store/run_store.h"

namespace ls::app {

namespace fs = std::filesystem;

void add_export_options(CLI::App& cmd, ExportArgs& a) {
  cmd.add_flag("--merge", a.merge,
               "merge the adapter into the base weights and write a safetensors model folder (config, tokenizer "
               "files, model.safetensors or model-0000i-of-0000n shards + index) that transformers loads without PEFT");
  cmd.add_option("--model", a.model, "the base: a Hugging Face model folder (config.json, *.safetensors)");
  cmd.add_option("--adapter", a.adapter, "PEFT LoRA adapter folder (adapter_config.json, adapter_model.safetensors)");
  cmd.add_option("--out", a.out, "folder to write (must be absent or empty unless --force)");
  cmd.add_flag("--force", a.force, "replace an existing --out folder");
  cmd.add_option("--max-shard-size", a.max_shard_size, "largest weight file, as transformers spells it (5GB, 500MB, 2GiB)")
      ->capture_default_str();
  cmd.add_option("--run", a.run, "record the export under this run of the run store");
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

int run_export(const ExportArgs& a) {
  if (!a.merge) {
    std::fprintf(stderr,
                 "lorastudio: export needs --merge, the one export so far: export --merge --model DIR --adapter DIR "
                 "--out DIR writes the model with the adapter merged into its weights, a safetensors folder that "
                 "transformers loads (the adapter folder itself is already PEFT's format)\n");
    return 2;
  }
  if (a.model.empty() || a.adapter.empty() || a.out.empty())
    throw Error("export --merge needs --model DIR, --adapter DIR and --out DIR");
  const auto shard = parse_byte_size(a.max_shard_size);
  if (!shard) throw Error("--max-shard-size: \"" + a.max_shard_size + "\" is not a size such as 5GB, 500MB or 2GiB");
  std::optional<store::RunStore> runs;
  if (a.run >= 0) {
    runs.emplace(a.store.empty() ? store::default_store_path() : fs::path(a.store));
    runs->run(a.run);  // throws naming the run when the store has no such run
  }
  const auto r = model::merge_adapter(a.model, a.adapter, a.out, {.max_shard_bytes = *shard, .overwrite = a.force});
  if (runs) runs->add_export(a.run, fs::absolute(a.out).lexically_normal(), store::ExportFormat::merged);
  std::fprintf(stderr, "merged %s into %s: %zu weights merged, %zu copied; %zu weight file%s (%.1f MB) in %s\n",
               a.adapter.c_str(), a.model.c_str(), r.merged, r.copied, r.shards, r.shards == 1 ? "" : "s",
               double(r.bytes) / 1e6, a.out.c_str());
  return 0;
}

}  // namespace ls::app
