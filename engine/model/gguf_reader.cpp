#include "model/gguf_reader.h"

#include <cstring>
#include <type_traits>

#include "error.h"

namespace ls::gguf {
namespace {

class Cursor {
 public:
  Cursor(std::span<const std::byte> bytes, const std::filesystem::path& path) : bytes_(bytes), path_(path) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(path_.string() + ": byte " + std::to_string(pos_) + ": " + what);
  }
  template <class T>
  T get() {
    need(sizeof(T), "a number");
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string get_string() {
    const uint64_t n = get<uint64_t>();
    need(n, "a string of " + std::to_string(n) + " bytes");
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  uint64_t pos() const { return pos_; }
  void need(uint64_t n, const std::string& what) const {
    if (n > bytes_.size() - pos_) fail("the file ends inside " + what);
  }

 private:
  std::span<const std::byte> bytes_;
  const std::filesystem::path& path_;
  uint64_t pos_ = 0;
};

template <class T>
T get_scalar(Cursor& c) {
  if constexpr (std::is_same_v<T, std::string>) return c.get_string();
  else if constexpr (std::is_same_v<T, bool>) return c.get<uint8_t>() != 0;
  else return c.get<T>();
}

template <class T>
Value get_array(Cursor& c, uint64_t n) {
  // Each element takes at least one byte: a count past the file's end is refused before allocating.
  c.need(n, "an array of " + std::to_string(n) + " elements");
  std::vector<T> v;
  v.reserve(n);
  for (uint64_t i = 0; i < n; ++i) v.push_back(get_scalar<T>(c));
  return v;
}

Value get_value(Cursor& c, uint32_t type, bool in_array = false) {
  switch (ValueType(type)) {
    case ValueType::u8: return c.get<uint8_t>();
    case ValueType::i8: return c.get<int8_t>();
    case ValueType::u16: return c.get<uint16_t>();
    case ValueType::i16: return c.get<int16_t>();
    case ValueType::u32: return c.get<uint32_t>();
    case ValueType::i32: return c.get<int32_t>();
    case ValueType::f32: return c.get<float>();
    case ValueType::boolean: return c.get<uint8_t>() != 0;
    case ValueType::string: return c.get_string();
    case ValueType::u64: return c.get<uint64_t>();
    case ValueType::i64: return c.get<int64_t>();
    case ValueType::f64: return c.get<double>();
    case ValueType::array: {
      if (in_array) c.fail("nested arrays are not supported");
      const uint32_t elem = c.get<uint32_t>();
      const uint64_t n = c.get<uint64_t>();
      switch (ValueType(elem)) {
        case ValueType::string: return get_array<std::string>(c, n);
        case ValueType::i32: return get_array<int32_t>(c, n);
        case ValueType::u32: return get_array<uint32_t>(c, n);
        case ValueType::f32: return get_array<float>(c, n);
        case ValueType::u8: return get_array<uint8_t>(c, n);
        case ValueType::i64: return get_array<int64_t>(c, n);
        case ValueType::u64: return get_array<uint64_t>(c, n);
        case ValueType::f64: return get_array<double>(c, n);
        default: c.fail("arrays of value type " + std::to_string(elem) + " are not supported");
      }
    }
  }
  c.fail("unknown value type " + std::to_string(type));
}

}  // namespace

Reader Reader::open(const std::filesystem::path& path) {
  Reader r(MappedFile{path});
  Cursor c(r.file_.bytes(), path);
  if (r.file_.size() < 4 || std::memcmp(r.file_.bytes().data(), "GGUF", 4) != 0) c.fail("not a GGUF file (no magic)");
  c.get<uint32_t>();
  r.version_ = c.get<uint32_t>();
  if (r.version_ != 2 && r.version_ != 3) c.fail("GGUF version " + std::to_string(r.version_) + " is not supported");
  const uint64_t n_tensors = c.get<uint64_t>(), n_kv = c.get<uint64_t>();
  c.need(n_kv, std::to_string(n_kv) + " key-values");
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.get_string();
    const uint32_t type = c.get<uint32_t>();
    Value v = get_value(c, type);
    if (r.find(key)) c.fail("key \"" + key + "\" appears twice");
    if (key == "general.alignment") {
      const auto* a = std::get_if<uint32_t>(&v);
      if (!a || *a == 0 || (*a & (*a - 1)) != 0) c.fail("general.alignment is not a power of two u32");
      r.alignment_ = *a;
    }
    r.kv_.emplace_back(std::move(key), std::move(v));
  }
  c.need(n_tensors, std::to_string(n_tensors) + " tensor infos");
  std::vector<uint64_t> offsets;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo t;
    t.name = c.get_string();
    const uint32_t dims = c.get<uint32_t>();
    if (dims == 0 || dims > 4) c.fail("tensor \"" + t.name + "\" has " + std::to_string(dims) + " dimensions");
    for (uint32_t d = 0; d < dims; ++d) t.ne.push_back(c.get<uint64_t>());
    t.type = c.get<uint32_t>();
    offsets.push_back(c.get<uint64_t>());
    if (r.tensor(t.name)) c.fail("tensor \"" + t.name + "\" appears twice");
    r.tensors_.push_back(std::move(t));
  }
  const uint64_t data = (c.pos() + r.alignment_ - 1) / r.alignment_ * r.alignment_;
  for (size_t i = 0; i < r.tensors_.size(); ++i) {
    TensorInfo& t = r.tensors_[i];
    if (offsets[i] % r.alignment_ != 0)
      c.fail("tensor \"" + t.name + "\" starts at " + std::to_string(offsets[i]) + ", not a multiple of the alignment");
    if (!type_traits(t.type)) continue;
    const uint64_t n = tensor_bytes(TensorType(t.type), t.ne, t.name);
    if (data > r.file_.size() || offsets[i] > r.file_.size() - data || n > r.file_.size() - data - offsets[i])
      c.fail("tensor \"" + t.name + "\" (" + std::to_string(n) + " bytes at data offset " + std::to_string(offsets[i]) +
             ") runs past the end of the file");
    t.bytes = r.file_.bytes().subspan(data + offsets[i], n);
  }
  return r;
}

const Value* Reader::find(const std::string& key) const {
  for (const auto& [k, v] : kv_)
    if (k == key) return &v;
  return nullptr;
}

const TensorInfo* Reader::tensor(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace ls::gguf
