// lorastudio: command line entry. With no command it opens the desktop app (app/gui.h); `--batch` trains
// headless; `--demo` trains on the built-in demo model and prints its answers before and after
// (app/demo_command.h); `generate` and `chat` run a model from the terminal; `export --merge` writes the
// model with an adapter merged in, `export --trl` a PyTorch script with a run's settings; `template` prints what
// a conversation becomes under a chat template (app/template_command.h); `--version` and
// `--devices` report. Without a display the default is the device report and a line saying why no window
// opened.
// Exit codes: 0 success, 1 an error (one line on stderr), 2 bad command line.
#include <CLI/CLI.hpp>

#include <iostream>

#include "error.h"
#include "batch_command.h"
#include "build_info.h"
#include "demo_command.h"
#include "export_command.h"
#include "generate_command.h"
#include "gui.h"
#include "template_command.h"
#include "vk/device.h"

namespace {

int report_devices(const std::string& device) {
  auto reports = ls::vk::list_devices();
  const char* env = std::getenv("LORASTUDIO_DEVICE");
  uint32_t chosen = ls::vk::choose_device(reports, device.empty() && env ? env : device);
  for (const auto& r : reports) {
    std::cout << ls::vk::format_report(r);
    if (r.usable()) std::cout << "  tensor-core kernels: " << ls::vk::describe(ls::vk::tensor_cores_for(r)) << "\n";
    if (r.index == chosen) std::cout << "  (selected)\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lorastudio — LoRA fine-tuning of language models on any Vulkan GPU"};
  bool version = false, devices = false;
  std::string device;
  app.add_flag("--version", version, "Print the version, git commit and build type, and exit");
  app.add_flag("--devices", devices, "List the Vulkan devices with the features lorastudio uses");
  app.add_option("--device", device,
                 "Vulkan device to use: its number from --devices or part of its name "
                 "(default: LORASTUDIO_DEVICE, else discrete > integrated > CPU)");
  bool batch = false;
  app.add_flag("--batch", batch, "Train a LoRA adapter headless (see the training options)");
  ls::app::BatchArgs batch_args;
  ls::app::add_batch_options(app, batch_args);
  bool demo = false;
  app.add_flag("--demo", demo,
               "Try lorastudio with nothing downloaded: train a LoRA adapter on a tiny built-in model (random weights) "
               "and data set in a few minutes, then print its answers before and after (--steps, --out, --store apply)");
  ls::app::GenerateArgs gen_args, chat_args;
  auto* generate = app.add_subcommand("generate", "Generate a reply to a prompt, streamed to stdout, or (--prompts) to every prompt "
                                                 "of a JSON Lines file, several decoding together");
  ls::app::add_generation_options(*generate, gen_args);
  generate->add_option("--prompt", gen_args.prompt, "the user message (or, with --raw, the exact text to continue)");
  generate->add_flag("--raw", gen_args.raw, "continue the prompt text as is, without the chat template");
  generate->add_option("--prompts", gen_args.prompts,
                       "instead of --prompt: a JSON Lines file of prompts in the training formats (messages: the "
                       "conversation before its last assistant message; prompt/completion: the prompt; text: the "
                       "text), each answered; the replies as JSON Lines, beside the file's own answers")
      ->check(CLI::ExistingFile);
  generate->add_option("--out", gen_args.out, "--prompts: write the replies to this JSON Lines file (default: stdout)");
  generate->add_option("--batch-size", gen_args.batch_size, "--prompts: sequences decoding together")
      ->capture_default_str();
  generate->add_flag("--compare-base", gen_args.compare_base,
                     "--prompts with --adapter: also the base model's reply to each prompt (base_reply)");
  auto* chat = app.add_subcommand("chat", "Interactive chat in the terminal, with the model's chat template");
  ls::app::add_generation_options(*chat, chat_args);
  chat_args.temperature = 0.7f;
  ls::app::ExportArgs export_args;
  auto* export_cmd = app.add_subcommand("export", "Write a trained adapter in another form: --merge writes the model "
                                                  "with the adapter merged in, a safetensors folder transformers loads; "
                                                  "--trl writes a PyTorch script that trains with a run's settings; "
                                                  "--gguf writes GGUF files and a Modelfile for llama.cpp and Ollama");
  ls::app::add_export_options(*export_cmd, export_args);
  ls::app::TemplateArgs template_args;
  auto* template_cmd = app.add_subcommand(
      "template", "Print what a conversation becomes under a chat template, byte for byte as transformers' "
                  "apply_chat_template(tokenize=False) renders it (nothing added, not even a newline)");
  ls::app::add_template_options(*template_cmd, template_args);
  ls::app::GuiArgs gui;
  auto* gui_group = app.add_option_group("Desktop app (the default)", "the window");
  gui_group->add_option("--ui-script", gui.ui_script, "run a UI scenario in the window (see ui/ui_script.h)");
  gui_group->add_option("--geometry", gui.geometry, "window size WIDTHxHEIGHT (default: 85% of the screen)");
  gui_group->add_flag("--validation", gui.validation, "Vulkan validation layer on (also LORASTUDIO_VALIDATION=1)");
  app.footer(
      "Exit codes: 0 success, 1 error (one line on stderr), 2 bad command line, 130 training stopped by Ctrl-C\n"
      "(a checkpoint was written).\n");
  try {
    app.parse(argc, argv);
  } catch (const CLI::FileError& e) {  // --config names no file
    std::cerr << "lorastudio: --config: " << e.what() << "\n";
    return 1;
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const ls::Error& e) {  // a --config file that is not TOML or sets a bad key or value
    std::cerr << "lorastudio: " << e.what() << "\n";
    return 1;
  }

  try {
    if (demo) {
      const bool out_given = app.get_option("--out")->count() > 0;
      return ls::app::run_demo({.steps = batch_args.config.steps, .out = out_given ? batch_args.config.out.string() : "",
                                .store = batch_args.store, .device = device, .quiet = batch_args.quiet});
    }
    if (batch) {
      batch_args.device = device;
      return ls::app::run_batch(batch_args);
    }
    if (*generate) {
      if (gen_args.device.empty()) gen_args.device = device;
      return ls::app::run_generate(gen_args);
    }
    if (*chat) {
      if (chat_args.device.empty()) chat_args.device = device;
      return ls::app::run_chat(chat_args);
    }
    if (*export_cmd) return ls::app::run_export(export_args);
    if (*template_cmd) return ls::app::run_template(template_args);
    if (version) {
      const auto& b = ls::app::build_info();
      std::cout << "lorastudio " << b.version << " (commit " << b.commit << ", " << b.build_type << " build)\n";
      if (!devices) return 0;
    }
    if (devices) return report_devices(device);
    if (!ls::app::display_available() && gui.ui_script.empty()) {
      std::cerr << "lorastudio: no display (DISPLAY and WAYLAND_DISPLAY are unset), so no window; "
                   "`lorastudio --batch` trains headless. The Vulkan devices:\n";
      return report_devices(device);
    }
    gui.device = device;
    gui.store = batch_args.store;
    return ls::app::run_gui(gui);
  } catch (const std::exception& e) {
    std::cerr << "lorastudio: " << e.what() << "\n";
    return 1;
  }
}
