#pragma once
// `--config FILE`: a TOML file setting the long options of a command, read with toml++ and handed to
// CLI11 as config items (a CLI::Config, installed by add_toml_config). The file holds top-level keys only:
//   batch_size = 4            # or batch-size: a key names --batch-size with underscores or hyphens
//   lr = 3e-4                 # numbers for number options (an integer is fine for a float option)
//   model = "Qwen2.5-0.5B"    # strings for text options (an integer too: device = 0)
//   rslora = true             # booleans for flags
//   targets = ["q_proj", "v_proj"]   # an array of strings is a comma list (--targets q_proj,v_proj)
// Options given on the command line win over the file (CLI11 skips config items for options it already
// has). Every problem throws ls::Error with one line naming the file, line and column: a TOML syntax error
// (with toml++'s description), a table ([section] or key = {...}), a key that is no option of the command
// or one that cannot be set from a file (help), a key given twice (batch_size and batch-size), and a
// value of the wrong type for its option (steps = "ten", rslora = 1, lr = "3e-4", targets = [1, 2]).
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace ls::app {

class TomlConfig : public CLI::Config {
 public:
  // `app`: the command whose options the keys name; `config_option`: its --config option, whose value
  // names the file in messages. Both must outlive the TomlConfig (CLI11 keeps it in `app`).
  TomlConfig(const CLI::App& app, const CLI::Option& config_option) : app_(&app), config_option_(&config_option) {}

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override;
  // TOML of the options' current values, as CLI11's own TOML writer makes it (app.config_to_str()).
  std::string to_config(const CLI::App* app, bool default_also, bool write_description,
                        std::string prefix) const override;

 private:
  const CLI::App* app_;
  const CLI::Option* config_option_;
};

// Adds `--config FILE` (option_name) to `app` and reads it through a TomlConfig. Returns the option.
CLI::Option* add_toml_config(CLI::App& app, const std::string& option_name, const std::string& help);

}  // namespace ls::app
