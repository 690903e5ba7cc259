#include "model/safetensors.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <set>
#include <utility>

#include "error.h"
#include "tensor/tensor.h"
#include "util/atomic_file.h"
#include "util/json_file.h"

namespace ls::model {
namespace {

using nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference library's limit

std::string in_quotes(std::string_view s) { return "\"" + std::string(s) + "\""; }

// The dtypes we read, by their safetensors names: the float types of weights, and I32 (token ids in
// test fixtures; check_weights refuses it for weights).
std::optional<DType> float_dtype(std::string_view name) {
  if (name == "F32") return DType::f32;
  if (name == "F16") return DType::f16;
  if (name == "BF16") return DType::bf16;
  if (name == "I32") return DType::i32;
  return std::nullopt;
}

// Every other dtype the format defines (as of safetensors 0.6): known, but not ours to read.
bool other_safetensors_dtype(std::string_view name) {
  static constexpr std::string_view kOthers[] = {"BOOL", "U8",  "I8",  "F8_E5M2", "F8_E4M3", "F8_E8M0",
                                                 "I16",  "U16", "U32",     "I64",     "U64",
                                                 "F64",  "C64", "F4",  "F6_E2M3", "F6_E3M2"};
  return std::find(std::begin(kOthers), std::end(kOthers), name) != std::end(kOthers);
}

// Position of a dtype in the reference library's Dtype enum (increasing alignment); it writes the largest first.
int alignment_rank(DType t) {
  switch (t) {
    case DType::f16: return 0;
    case DType::bf16: return 1;
    case DType::i32: return 2;
    case DType::f32: return 3;
  }
  return 0;
}

// numel * element_size, or nullopt on overflow.
std::optional<uint64_t> byte_count(const std::vector<uint64_t>& shape, uint64_t element_size) {
  uint64_t n = element_size;
  for (uint64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  return n;
}

// Parses one file's header and appends its tensors (validated, with spans into `file`) to `out`.
// Fills `metadata` from "__metadata__" when given.
void read_header(const MappedFile& file, std::vector<TensorInfo>& out, std::map<std::string, std::string>* metadata) {
  const std::string where = file.path().string();
  const std::span<const std::byte> bytes = file.bytes();
  if (bytes.size() < 8)
    throw Error(where + ": file is " + std::to_string(bytes.size()) +
                " bytes, shorter than the 8-byte header length (not a safetensors file?)");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | uint64_t(bytes[size_t(i)]);
  if (n > kMaxHeaderBytes)
    throw Error(where + ": header length " + std::to_string(n) +
                " is above the 100 MB limit (not a safetensors file?)");
  if (n > bytes.size() - 8)
    throw Error(where + ": header length " + std::to_string(n) + " runs past the end of the file (" +
                std::to_string(bytes.size()) + " bytes)");
  const char* text = reinterpret_cast<const char*>(bytes.data() + 8);
  const std::span<const std::byte> data = bytes.subspan(8 + n);

  // Parse, refusing duplicate top-level keys (nlohmann would keep the last one silently).
  std::set<std::string> seen;
  json::parser_callback_t no_duplicates = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth == 1 && event == json::parse_event_t::key && !seen.insert(parsed.get<std::string>()).second)
      throw Error(where + ": header: tensor " + in_quotes(parsed.get<std::string>()) + " appears twice");
    return true;
  };
  json header;
  try {
    header = json::parse(text, text + n, no_duplicates);
  } catch (const json::exception& e) {
    throw Error(where + ": header is not valid JSON (" + e.what() + ")");
  }
  if (!header.is_object()) throw Error(where + ": header is not a JSON object");

  std::vector<TensorInfo> found;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // data_offsets, parallel to `found`
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) throw Error(where + ": header: \"__metadata__\" is not an object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string())
          throw Error(where + ": header: \"__metadata__\" value of " + in_quotes(key) + " is not a string");
        if (metadata) (*metadata)[key] = value.get<std::string>();
      }
      continue;
    }
    const std::string tensor = where + ": tensor " + in_quotes(name) + ": ";
    if (!entry.is_object()) throw Error(tensor + "header entry is not an object");
    for (const char* key : {"dtype", "shape", "data_offsets"})
      if (!entry.contains(key)) throw Error(tensor + "header entry has no \"" + key + "\"");

    const json& dtype_j = entry["dtype"];
    if (!dtype_j.is_string()) throw Error(tensor + "dtype is not a string");
    const std::string dtype_name = dtype_j.get<std::string>();
    std::optional<DType> dtype = float_dtype(dtype_name);
    if (!dtype && other_safetensors_dtype(dtype_name))
      throw Error(tensor + "dtype " + dtype_name + " is not supported (only F32, F16, BF16)");
    if (!dtype) throw Error(tensor + "unknown dtype " + in_quotes(dtype_name));

    const json& shape_j = entry["shape"];
    if (!shape_j.is_array()) throw Error(tensor + "shape is not an array");
    std::vector<uint64_t> shape;
    for (const json& d : shape_j) {
      if (!d.is_number_unsigned())
        throw Error(tensor + "shape " + shape_j.dump() + " has an entry that is not a non-negative integer");
      shape.push_back(d.get<uint64_t>());
    }

    const json& offsets_j = entry["data_offsets"];
    if (!offsets_j.is_array() || offsets_j.size() != 2 || !offsets_j[0].is_number_unsigned() ||
        !offsets_j[1].is_number_unsigned())
      throw Error(tensor + "data_offsets " + offsets_j.dump() + " is not two non-negative integers");
    const uint64_t begin = offsets_j[0].get<uint64_t>(), end = offsets_j[1].get<uint64_t>();
    const std::string range = "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
    if (begin > end) throw Error(tensor + "data_offsets " + range + " begin after they end");
    if (end > data.size())
      throw Error(tensor + "data_offsets " + range + " run past the data section (" + std::to_string(data.size()) +
                  " bytes)");

    std::optional<uint64_t> expected = byte_count(shape, dtype_size(*dtype));
    if (!expected) throw Error(tensor + "shape " + shape_string(shape) + " overflows");
    if (*expected != end - begin)
      throw Error(tensor + "shape " + shape_string(shape) + " of " + dtype_name + " needs " +
                  std::to_string(*expected) + " bytes, data_offsets " + range + " hold " + std::to_string(end - begin));

    found.push_back({.name = name,
                     .dtype = *dtype,
                     .shape = std::move(shape),
                     .bytes = data.subspan(begin, end - begin),
                     .file = file.path()});
    ranges.emplace_back(begin, end);
  }

  // No two non-empty byte ranges may overlap: sorted by begin, each must start at or after the furthest end so far.
  std::vector<size_t> order(found.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ranges[a] < ranges[b]; });
  std::optional<size_t> furthest;
  for (size_t i : order) {
    if (ranges[i].first == ranges[i].second) continue;
    if (furthest && ranges[i].first < ranges[*furthest].second) {
      auto show = [&](size_t k) {
        return in_quotes(found[k].name) + " [" + std::to_string(ranges[k].first) + ", " +
               std::to_string(ranges[k].second) + ")";
      };
      throw Error(where + ": tensor " + show(i) + " overlaps tensor " + show(*furthest));
    }
    if (!furthest || ranges[i].second > ranges[*furthest].second) furthest = i;
  }
  for (TensorInfo& t : found) out.push_back(std::move(t));
}

void sort_by_name(std::vector<TensorInfo>& tensors) {
  std::sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
}

}  // namespace

uint64_t TensorInfo::numel() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;  // cannot overflow: open() checked numel * dtype size
  return n;
}

std::vector<float> TensorInfo::values_f32() const {
  if (dtype == DType::i32) throw Error(file.string() + ": tensor \"" + name + "\" is not a float tensor");
  std::vector<float> v(numel());
  for (size_t i = 0; i < v.size(); ++i) v[i] = load_as_f32(bytes.data(), dtype, i);
  return v;
}

const char* safetensors_dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "F32";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::i32: return "I32";
  }
  return "?";
}

SafeTensors SafeTensors::open(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  SafeTensors st;
  st.path_ = path;
  fs::path file = path, index;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (fs::exists(path / "model.safetensors", ec)) {
      file = path / "model.safetensors";
    } else if (fs::exists(path / "model.safetensors.index.json", ec)) {
      index = path / "model.safetensors.index.json";
    } else {
      throw Error(path.string() + ": folder holds neither model.safetensors nor model.safetensors.index.json");
    }
  } else if (path.extension() == ".json") {
    index = path;
  }

  if (index.empty()) {
    st.files_.emplace_back(file);
    read_header(st.files_.back(), st.tensors_, &st.metadata_);
    sort_by_name(st.tensors_);
    return st;
  }

  // Sharded: {"metadata": {...}, "weight_map": {"tensor name": "model-00001-of-00002.safetensors", ...}}.
  const std::string where = index.string();
  const json j = read_json_file(index);
  if (!j.is_object()) throw Error(where + ": not a JSON object");
  if (!j.contains("weight_map") || !j["weight_map"].is_object()) throw Error(where + ": no \"weight_map\" object");
  std::map<std::string, std::string> shard_of;  // tensor name -> shard file name
  std::set<std::string> shards;
  for (const auto& [name, shard] : j["weight_map"].items()) {
    if (!shard.is_string()) throw Error(where + ": weight_map: tensor " + in_quotes(name) + ": shard is not a string");
    const std::string s = shard.get<std::string>();
    if (s.empty() || s == "." || s == ".." || s.find('/') != std::string::npos)
      throw Error(where + ": weight_map: tensor " + in_quotes(name) + ": shard " + in_quotes(s) +
                  " is not a plain file name beside the index");
    shard_of[name] = s;
    shards.insert(s);
  }

  std::map<std::string, std::string> found_in;  // tensor name -> shard holding it
  for (const std::string& shard : shards) {
    st.files_.emplace_back(index.parent_path() / shard);
    std::vector<TensorInfo> here;
    read_header(st.files_.back(), here, st.files_.size() == 1 ? &st.metadata_ : nullptr);
    for (TensorInfo& t : here) {
      auto [it, fresh] = found_in.emplace(t.name, shard);
      if (!fresh)
        throw Error(where + ": tensor " + in_quotes(t.name) + " is in two shards, " + it->second + " and " + shard);
      auto listed = shard_of.find(t.name);
      if (listed == shard_of.end())
        throw Error(where + ": tensor " + in_quotes(t.name) + " is in shard " + shard +
                    " but the weight_map does not list it");
      if (listed->second != shard)
        throw Error(where + ": tensor " + in_quotes(t.name) + " is in shard " + shard + " but the weight_map names " +
                    listed->second + " for it");
      st.tensors_.push_back(std::move(t));
    }
  }
  for (const auto& [name, shard] : shard_of)
    if (!found_in.contains(name))
      throw Error(where + ": weight_map lists tensor " + in_quotes(name) + " in " + shard +
                  " but that shard does not hold it");
  sort_by_name(st.tensors_);
  return st;
}

const TensorInfo* SafeTensors::find(std::string_view name) const {
  auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                             [](const TensorInfo& t, std::string_view n) { return t.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

const TensorInfo& SafeTensors::at(std::string_view name) const {
  if (const TensorInfo* t = find(name)) return *t;
  throw Error(path_.string() + ": no tensor " + in_quotes(name));
}

namespace {

// What the header needs of a tensor to write; `index` is its place in the caller's list.
struct HeaderEntry {
  const std::string* name;
  DType dtype;
  const std::vector<uint64_t>* shape;
  uint64_t size;  // bytes
  size_t index;
};

// The 8-byte length and the header for `entries`, which it sorts into data order (see write_safetensors).
// Checks names (not reserved, not twice) and that each shape's byte count does not overflow.
std::string header_bytes(std::vector<HeaderEntry>& entries, const std::map<std::string, std::string>& metadata,
                         const std::string& where) {
  // JSON string as serde_json writes it: raw UTF-8, escapes only for '"', '\\' and control characters.
  auto json_string = [&](const std::string& s, const std::string& what) {
    try {
      return json(s).dump();
    } catch (const json::exception&) {
      throw Error(where + ": " + what + " " + in_quotes(s) + " is not valid UTF-8");
    }
  };

  std::set<std::string_view> names;
  for (const HeaderEntry& t : entries) {
    const std::string tensor = where + ": tensor " + in_quotes(*t.name) + ": ";
    if (*t.name == "__metadata__") throw Error(tensor + "the name is reserved for the metadata");
    if (!names.insert(*t.name).second) throw Error(tensor + "given twice");
  }
  std::sort(entries.begin(), entries.end(), [](const HeaderEntry& a, const HeaderEntry& b) {
    int ra = alignment_rank(a.dtype), rb = alignment_rank(b.dtype);
    return ra != rb ? ra > rb : *a.name < *b.name;
  });

  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [key, value] : metadata) {
      header += (first ? "" : ",") + json_string(key, "metadata key") + ":" + json_string(value, "metadata value");
      first = false;
    }
    header += "}";
  }
  uint64_t offset = 0;
  for (const HeaderEntry& t : entries) {
    if (header.size() > 1) header += ",";
    std::string shape;
    for (size_t i = 0; i < t.shape->size(); ++i) shape += (i ? "," : "") + std::to_string((*t.shape)[i]);
    const uint64_t end = offset + t.size;
    header += json_string(*t.name, "tensor name") + ":{\"dtype\":\"" + safetensors_dtype_name(t.dtype) +
              "\",\"shape\":[" + shape + "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) +
              "]}";
    offset = end;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');

  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(char((uint64_t(header.size()) >> (8 * i)) & 0xff));
  return out + header;
}

// The byte count of a tensor's shape, or an ls::Error naming the file and tensor when it overflows.
uint64_t checked_byte_count(const std::string& name, DType dtype, const std::vector<uint64_t>& shape,
                            const std::string& where) {
  std::optional<uint64_t> n = byte_count(shape, dtype_size(dtype));
  if (!n) throw Error(where + ": tensor " + in_quotes(name) + ": shape " + shape_string(shape) + " overflows");
  return *n;
}

}  // namespace

std::string serialize_safetensors(std::span<const TensorToWrite> tensors,
                                  const std::map<std::string, std::string>& metadata,
                                  const std::filesystem::path& path_for_errors) {
  const std::string where = path_for_errors.string();
  std::vector<HeaderEntry> entries;
  uint64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorToWrite& t = tensors[i];
    const uint64_t expected = checked_byte_count(t.name, t.dtype, t.shape, where);
    if (expected != t.bytes.size())
      throw Error(where + ": tensor " + in_quotes(t.name) + ": shape " + shape_string(t.shape) + " of " +
                  safetensors_dtype_name(t.dtype) + " needs " + std::to_string(expected) + " bytes, given " +
                  std::to_string(t.bytes.size()));
    entries.push_back({.name = &t.name, .dtype = t.dtype, .shape = &t.shape, .size = expected, .index = i});
    total += expected;
  }
  std::string out = header_bytes(entries, metadata, where);
  out.reserve(out.size() + total);
  for (const HeaderEntry& e : entries) {
    const auto bytes = tensors[e.index].bytes;
    out.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  return out;
}

void write_safetensors(const std::filesystem::path& path, std::span<const TensorToWrite> tensors,
                       const std::map<std::string, std::string>& metadata) {
  write_file_atomically(path, serialize_safetensors(tensors, metadata, path));
}

void write_safetensors_streamed(const std::filesystem::path& path, std::span<const TensorToStream> tensors,
                                const std::map<std::string, std::string>& metadata) {
  const std::string where = path.string();
  std::vector<HeaderEntry> entries;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorToStream& t = tensors[i];
    entries.push_back({.name = &t.name,
                       .dtype = t.dtype,
                       .shape = &t.shape,
                       .size = checked_byte_count(t.name, t.dtype, t.shape, where),
                       .index = i});
  }
  AtomicFileWriter file(path);
  file.write(header_bytes(entries, metadata, where));
  for (const HeaderEntry& e : entries) {
    uint64_t written = 0;
    tensors[e.index].write([&](std::span<const std::byte> piece) {
      written += piece.size();
      if (written > e.size) return;  // reported below, before anything past the tensor's range is written
      file.write({reinterpret_cast<const char*>(piece.data()), piece.size()});
    });
    if (written != e.size)
      throw Error(where + ": tensor " + in_quotes(*e.name) + ": shape " + shape_string(*e.shape) + " of " +
                  safetensors_dtype_name(e.dtype) + " needs " + std::to_string(e.size) + " bytes, given " +
                  std::to_string(written));
  }
  file.commit();
}

}  // namespace ls::model
