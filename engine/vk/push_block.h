#pragma once
// The push-constant block a kernel declares, read from its SPIR-V: each member's byte offset (SPIR-V's
// Offset decorations), every scalar in it with its offset and type, and the block's size (the end of its last
// member). The recorder checks every dispatch's Params struct against it: its size, and each of the block's
// scalars at the same offset with the same type in the struct (vk/params_layout.h reads the struct's members),
// so a Params struct and its GLSL block cannot drift apart unnoticed.
#include <cstdint>
#include <span>
#include <vector>

#include "kernels.h"

namespace ls::vk {

// One scalar of a block: a member, or a component or element of one (vectors, arrays and structs flattened).
enum class ScalarKind : uint8_t { u32, i32, f32, other };
struct Scalar {
  uint32_t offset = 0;
  ScalarKind kind = ScalarKind::other;
  bool operator==(const Scalar&) const = default;
};
const char* scalar_kind_name(ScalarKind kind);  // "uint", "int", "float", "another type"

struct PushBlock {
  std::vector<uint32_t> offsets;  // by member, in declaration order
  std::vector<Scalar> scalars;    // every scalar, by offset
  uint32_t size = 0;              // 0 for a kernel without push constants
};

// Throws ls::Error naming `what` for words that are not SPIR-V or a block this reader does not know
// (members other than scalars, vectors, arrays with an ArrayStride and structs).
PushBlock push_block(std::span<const uint32_t> words, const char* what);
// The block of a built kernel, read once and kept.
const PushBlock& push_block(Kernel kernel);

}  // namespace ls::vk
