#pragma once
// The gated MLPs' activation, y = act(gate)·up (ops/activations.h): which act, for the kernels that apply it inside
// another op (the decode products of ops/matvec_norm.h, down's dx product of ops/matmul.h).

namespace ls::ops {

enum class GluActivation { silu, gelu_tanh };

}  // namespace ls::ops
