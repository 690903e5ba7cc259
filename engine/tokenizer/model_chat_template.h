#pragma once
// The chat template a model folder carries and the special tokens transformers passes to it, read as
// transformers reads them: chat_template.jinja beside tokenizer_config.json takes precedence over the
// config's "chat_template", which is a string or a list of {name, template} (the one named "default"
// unless another name is asked for; a named one may also be additional_chat_templates/NAME.jinja). The
// special tokens (bos_token, eos_token, unk_token, sep_token, pad_token, cls_token, mask_token) are strings
// or AddedToken objects {"content": ...}; transformers gives the template those that are set.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ls::tok {

struct ModelChatTemplate {
  std::string jinja;   // empty when the folder has no chat template
  std::string source;  // the file the template was read from (the config when there is none)
  std::vector<std::pair<std::string, std::string>> special_tokens;  // name, text: those that are set
  std::optional<std::string> special_token(std::string_view name) const;
};

// Throws ls::Error naming the file: unreadable or malformed JSON, a chat_template of the wrong type, a list
// without the asked-for name, a special token that is neither a string nor {"content": string}.
// A missing tokenizer_config.json is an error unless chat_template.jinja is there.
ModelChatTemplate read_model_chat_template(const std::filesystem::path& tokenizer_config_json,
                                           const std::string& template_name = "default");

}  // namespace ls::tok
