#pragma once
// The push-constant block a kernel declares, read from its SPIR-V: each member's byte offset (SPIR-V's
// Offset decorations) and the block's size (the end of its last member). The recorder checks every
// dispatch's Params struct against it (vk/recorder.cpp), and push_block_test checks the C++ structs'
// member offsets where they are visible, so a Params struct and its GLSL block cannot drift apart
// unnoticed.
#include <cstdint>
#include <span>
#include <vector>

#include "kernels.h"

namespace ls::vk {

struct PushBlock {
  std::vector<uint32_t> offsets;  // by member, in declaration order
  uint32_t size = 0;              // 0 for a kernel without push constants
};

// Throws ls::Error naming `what` for words that are not SPIR-V or a block this reader does not know
// (members other than scalars, vectors, arrays with an ArrayStride and structs).
PushBlock push_block(std::span<const uint32_t> words, const char* what);
// The block of a built kernel, read once and kept.
const PushBlock& push_block(Kernel kernel);

}  // namespace ls::vk
