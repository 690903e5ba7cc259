#include "vk/push_block.h"

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "error.h"

namespace ls::vk {
namespace {

// The SPIR-V instructions and enumerants read here (SPIR-V 1.6 specification, sections 3 and 2.3).
constexpr uint32_t kMagic = 0x07230203;
enum Op : uint32_t {
  OpTypeInt = 21, OpTypeFloat = 22, OpTypeVector = 23, OpTypeArray = 28, OpTypeStruct = 30, OpTypePointer = 32,
  OpConstant = 43, OpVariable = 59, OpDecorate = 71, OpMemberDecorate = 72,
};
constexpr uint32_t kDecorationArrayStride = 6, kDecorationOffset = 35, kStoragePushConstant = 9;

struct Module {
  std::map<uint32_t, std::vector<uint32_t>> types;  // id -> the type instruction's operands after the id
  std::map<uint32_t, uint32_t> type_op;              // id -> its opcode
  std::map<uint32_t, uint32_t> constants;            // id -> a 32-bit constant's value
  std::map<uint32_t, uint32_t> array_stride;         // array type id -> ArrayStride
  std::map<uint32_t, std::map<uint32_t, uint32_t>> member_offsets;  // struct id -> member -> Offset
  std::optional<uint32_t> push_pointer_type;         // the type of the PushConstant variable
};

[[noreturn]] void fail(const char* what, const std::string& why) {
  throw Error(std::string(what) + ": push-constant block: " + why);
}

uint32_t size_of(const Module& m, uint32_t type, const char* what);

uint32_t struct_size(const Module& m, uint32_t type, const char* what) {
  const auto& members = m.types.at(type);
  const auto offsets = m.member_offsets.find(type);
  uint32_t end = 0;
  for (uint32_t i = 0; i < members.size(); ++i) {
    if (offsets == m.member_offsets.end() || !offsets->second.count(i)) fail(what, "a member without an Offset");
    end = std::max(end, offsets->second.at(i) + size_of(m, members[i], what));
  }
  return end;
}

uint32_t size_of(const Module& m, uint32_t type, const char* what) {
  const auto op = m.type_op.find(type);
  if (op == m.type_op.end()) fail(what, "type %" + std::to_string(type) + " is not declared");
  const std::vector<uint32_t>& t = m.types.at(type);
  switch (op->second) {
    case OpTypeInt:
    case OpTypeFloat: return t.at(0) / 8;
    case OpTypeVector: return size_of(m, t.at(0), what) * t.at(1);
    case OpTypeArray: {
      const auto stride = m.array_stride.find(type);
      const auto length = m.constants.find(t.at(1));
      if (stride == m.array_stride.end() || length == m.constants.end()) fail(what, "an array without a stride");
      return stride->second * length->second;
    }
    case OpTypeStruct: return struct_size(m, type, what);
    default: fail(what, "a member of SPIR-V type opcode " + std::to_string(op->second) + ", which this reader does not size");
  }
}

// Appends every scalar of `type` placed at `at`, by offset.
void flatten(const Module& m, uint32_t type, uint32_t at, std::vector<Scalar>& out, const char* what) {
  const std::vector<uint32_t>& t = m.types.at(type);
  switch (m.type_op.at(type)) {
    case OpTypeInt:
      out.push_back({at, t.at(0) != 32 ? ScalarKind::other : t.at(1) ? ScalarKind::i32 : ScalarKind::u32});
      return;
    case OpTypeFloat: out.push_back({at, t.at(0) == 32 ? ScalarKind::f32 : ScalarKind::other}); return;
    case OpTypeVector:
      for (uint32_t i = 0; i < t.at(1); ++i) flatten(m, t.at(0), at + i * size_of(m, t.at(0), what), out, what);
      return;
    case OpTypeArray: {
      const uint32_t stride = m.array_stride.at(type), length = m.constants.at(t.at(1));
      for (uint32_t i = 0; i < length; ++i) flatten(m, t.at(0), at + i * stride, out, what);
      return;
    }
    case OpTypeStruct:
      for (uint32_t i = 0; i < t.size(); ++i) flatten(m, t[i], at + m.member_offsets.at(type).at(i), out, what);
      return;
    default: fail(what, "a member this reader does not flatten");
  }
}

}  // namespace

const char* scalar_kind_name(ScalarKind kind) {
  switch (kind) {
    case ScalarKind::u32: return "uint";
    case ScalarKind::i32: return "int";
    case ScalarKind::f32: return "float";
    case ScalarKind::other: break;
  }
  return "another type";
}

PushBlock push_block(std::span<const uint32_t> words, const char* what) {
  if (words.size() < 5 || words[0] != kMagic) fail(what, "not SPIR-V");
  Module m;
  for (size_t i = 5; i < words.size();) {
    const uint32_t count = words[i] >> 16, op = words[i] & 0xffff;
    if (count == 0 || i + count > words.size()) fail(what, "an instruction runs past the end of the words");
    const std::span<const uint32_t> operands = words.subspan(i + 1, count - 1);
    switch (op) {
      case OpTypeInt:
      case OpTypeFloat:
      case OpTypeVector:
      case OpTypeArray:
      case OpTypeStruct:
        m.type_op[operands[0]] = op;
        m.types[operands[0]] = {operands.begin() + 1, operands.end()};
        break;
      case OpTypePointer:
        if (operands[1] == kStoragePushConstant) m.types[operands[0]] = {operands[2]};
        break;
      case OpConstant:
        if (operands.size() == 3) m.constants[operands[1]] = operands[2];
        break;
      case OpVariable:
        if (operands[2] == kStoragePushConstant) m.push_pointer_type = operands[0];
        break;
      case OpDecorate:
        if (operands[1] == kDecorationArrayStride) m.array_stride[operands[0]] = operands[2];
        break;
      case OpMemberDecorate:
        if (operands[2] == kDecorationOffset) m.member_offsets[operands[0]][operands[1]] = operands[3];
        break;
      default: break;
    }
    i += count;
  }
  PushBlock block;
  if (!m.push_pointer_type) return block;
  const uint32_t type = m.types.at(*m.push_pointer_type).at(0);
  if (m.type_op[type] != OpTypeStruct) fail(what, "not a struct");
  const auto offsets = m.member_offsets.find(type);
  for (uint32_t i = 0; i < m.types.at(type).size(); ++i) {
    if (offsets == m.member_offsets.end() || !offsets->second.count(i)) fail(what, "a member without an Offset");
    block.offsets.push_back(offsets->second.at(i));
  }
  block.size = struct_size(m, type, what);  // checks every member has an Offset, arrays a stride
  flatten(m, type, 0, block.scalars, what);
  std::sort(block.scalars.begin(), block.scalars.end(), [](const Scalar& a, const Scalar& b) { return a.offset < b.offset; });
  return block;
}

const PushBlock& push_block(Kernel kernel) {
  static std::mutex mutex;
  static std::array<std::optional<PushBlock>, size_t(Kernel::count_)> blocks;
  std::lock_guard lock(mutex);
  std::optional<PushBlock>& b = blocks[size_t(kernel)];
  if (!b) {
    const KernelInfo& info = kernel_info(kernel);
    b = push_block({info.words, info.word_count}, info.name);
  }
  return *b;
}

}  // namespace ls::vk
