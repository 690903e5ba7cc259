#version 450
#extension GL_GOOGLE_include_directive : require
// Per row of logits [rows, cols]: lse = log(sum_c exp(logits[c])), row_loss = lse - logits[target]
// for a counted row (0 <= target < cols), else 0. Targets past the vocabulary are ignored here: the
// host cannot see them, and they must not index out of the row. One workgroup per row (a row-stride
// loop takes the rest): an online (max, sum of exp) per thread, merged by workgroup_max/workgroup_sum.
// cross_entropy_reduce.comp then averages row_loss into the loss.
// V8 (f16 logits): rows whose length is a multiple of 8 are read eight values a thread (common/f16x8.glsl).
#include "common/types.glsl"
#include "common/reduce.glsl"
#ifdef V8
#include "common/f16x8.glsl"
#endif
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer Logits { STORE(T) logits[]; };
layout(binding = 1) readonly buffer Targets { int targets[]; };
layout(binding = 2) writeonly buffer Lse { float lse[]; };
layout(binding = 3) writeonly buffer RowLoss { float row_loss[]; };
layout(push_constant) uniform Params { uint rows; uint cols; } p;

#ifdef V8
layout(binding = 0) readonly buffer Logits8 { uvec4 logits8[]; };
#endif

const float kLowest = -3.402823466e38;  // below every finite logit; exp(kLowest - m) is 0

// One more value into a thread's online (max, sum of exp).
void online_add(const in float v, inout float m, inout float s) {
  if (v > m) {
    s = s * exp(m - v) + 1.0;
    m = v;
  } else {
    s += exp(v - m);
  }
}

void main() {
  for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
    uint base = row * p.cols;
    float m = kLowest, s = 0.0;
    uint first = 0u;  // the first column of the one-a-thread loop
#ifdef V8
    if (p.cols % 8u == 0u) {
      const uint base8 = base / 8u;
      for (uint c8 = gl_LocalInvocationID.x; c8 < p.cols / 8u; c8 += gl_WorkGroupSize.x) {
        const uvec4 v = logits8[base8 + c8];
        [[unroll]] for (uint k = 0u; k < 4u; ++k) {
          const vec2 l = v8_pair(v, k);
          online_add(l.x, m, s);
          online_add(l.y, m, s);
        }
      }
      first = p.cols;
    }
#endif
    for (uint c = first + gl_LocalInvocationID.x; c < p.cols; c += gl_WorkGroupSize.x)
      online_add(TO_F32(T, logits[base + c]), m, s);
    float row_max = workgroup_max(m);
    float row_lse = row_max + log(workgroup_sum(s * exp(m - row_max)));
    if (gl_LocalInvocationID.x == 0u) {
      int target = targets[row];
      bool counted = target >= 0 && uint(target) < p.cols;
      lse[row] = row_lse;
      row_loss[row] = counted ? row_lse - TO_F32(T, logits[base + uint(target)]) : 0.0;
    }
  }
}
