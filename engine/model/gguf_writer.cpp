#include "model/gguf_writer.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "error.h"
#include "util/atomic_file.h"

namespace ls::gguf {
namespace {

// Little-endian serialisation into a string (the header is small; the data is streamed).
class Bytes {
 public:
  template <class T>
  void put(T v) {
    static_assert(std::is_arithmetic_v<T>);
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out_.append(b, sizeof(T));
  }
  void put_string(std::string_view s) {
    put<uint64_t>(s.size());
    out_.append(s);
  }
  void pad_to(uint64_t alignment) { out_.append((alignment - out_.size() % alignment) % alignment, '\0'); }
  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

template <class T>
constexpr ValueType type_of() {
  if constexpr (std::is_same_v<T, uint8_t>) return ValueType::u8;
  else if constexpr (std::is_same_v<T, int8_t>) return ValueType::i8;
  else if constexpr (std::is_same_v<T, uint16_t>) return ValueType::u16;
  else if constexpr (std::is_same_v<T, int16_t>) return ValueType::i16;
  else if constexpr (std::is_same_v<T, uint32_t>) return ValueType::u32;
  else if constexpr (std::is_same_v<T, int32_t>) return ValueType::i32;
  else if constexpr (std::is_same_v<T, float>) return ValueType::f32;
  else if constexpr (std::is_same_v<T, bool>) return ValueType::boolean;
  else if constexpr (std::is_same_v<T, std::string>) return ValueType::string;
  else if constexpr (std::is_same_v<T, uint64_t>) return ValueType::u64;
  else if constexpr (std::is_same_v<T, int64_t>) return ValueType::i64;
  else if constexpr (std::is_same_v<T, double>) return ValueType::f64;
  else return ValueType::array;
}

template <class T>
void put_scalar(Bytes& b, const T& v) {
  if constexpr (std::is_same_v<T, std::string>) b.put_string(v);
  else if constexpr (std::is_same_v<T, bool>) b.put<uint8_t>(v ? 1 : 0);
  else b.put<T>(v);
}

void put_value(Bytes& b, const Value& value) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        constexpr ValueType type = type_of<T>();
        b.put<uint32_t>(uint32_t(type));
        if constexpr (type == ValueType::array) {
          using E = typename T::value_type;
          b.put<uint32_t>(uint32_t(type_of<E>()));
          b.put<uint64_t>(v.size());
          for (const E& e : v) put_scalar(b, e);
        } else {
          put_scalar(b, v);
        }
      },
      value);
}

}  // namespace

void Writer::set(const std::string& key, Value value) {
  for (auto& [k, v] : kv_)
    if (k == key) {
      v = std::move(value);
      return;
    }
  kv_.emplace_back(key, std::move(value));
}

const Value* Writer::find(const std::string& key) const {
  for (const auto& [k, v] : kv_)
    if (k == key) return &v;
  return nullptr;
}

void Writer::add_tensor(TensorToWrite tensor) {
  for (const auto& t : tensors_)
    if (t.name == tensor.name) throw Error("GGUF tensor \"" + tensor.name + "\" is added twice");
  tensor_bytes(tensor.type, tensor.ne, tensor.name);  // checks the shape
  tensors_.push_back(std::move(tensor));
}

void Writer::write(const std::filesystem::path& path, const Progress& progress) const {
  Bytes head;
  head.put<uint32_t>(0x46554747);  // "GGUF"
  head.put<uint32_t>(kVersion);
  head.put<uint64_t>(tensors_.size());
  head.put<uint64_t>(kv_.size());
  for (const auto& [key, value] : kv_) {
    head.put_string(key);
    put_value(head, value);
  }
  std::vector<uint64_t> sizes;
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    head.put_string(t.name);
    head.put<uint32_t>(uint32_t(t.ne.size()));
    for (uint64_t n : t.ne) head.put<uint64_t>(n);
    head.put<uint32_t>(uint32_t(t.type));
    head.put<uint64_t>(offset);
    sizes.push_back(tensor_bytes(t.type, t.ne, t.name));
    offset += (sizes.back() + kAlignment - 1) / kAlignment * kAlignment;
  }
  head.pad_to(kAlignment);
  const uint64_t total = offset;

  AtomicFileWriter file(path);
  file.write(head.str());
  static const char kZeros[kAlignment] = {};
  uint64_t done = 0;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    uint64_t written = 0;
    const TensorToWrite& t = tensors_[i];
    t.write([&](std::span<const std::byte> bytes) {
      if (written + bytes.size() > sizes[i])
        throw Error(path.string() + ": tensor \"" + t.name + "\" hands over more than its " +
                    std::to_string(sizes[i]) + " bytes");
      file.write({reinterpret_cast<const char*>(bytes.data()), bytes.size()});
      written += bytes.size();
      if (progress) progress(done + written, total);
    });
    if (written != sizes[i])
      throw Error(path.string() + ": tensor \"" + t.name + "\" handed over " + std::to_string(written) + " of its " +
                  std::to_string(sizes[i]) + " bytes");
    const uint64_t pad = (kAlignment - sizes[i] % kAlignment) % kAlignment;
    file.write({kZeros, pad});
    done += written + pad;
  }
  if (progress) progress(total, total);
  file.commit();
}

}  // namespace ls::gguf
