#version 450
#extension GL_GOOGLE_include_directive : require
// y = softmax(scale * x) over each row of x [rows, cols]. One workgroup per row; rows past the
// workgroup count are taken by a row-stride loop. Causal mode (causal_offset >= 0): row r is query
// t = r % seq, and columns c > t + causal_offset are masked: they take no part in the sums and y = 0.
// Two passes over the row: each thread keeps an online (max, sum of exp) over its strided columns, the
// workgroup merges them (workgroup_max, then workgroup_sum of the rescaled sums), then y is written.
// y may alias x: every element is read and then written by the same invocation.
#include "common/types.glsl"
#include "common/reduce.glsl"
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer X { STORE(T) x[]; };
layout(binding = 1) writeonly buffer Y { STORE(T) y[]; };
layout(push_constant) uniform Params {
  uint rows;
  uint cols;
  float scale;
  uint seq;           // T of the causal mask (rows are [..., T]); unused otherwise
  int causal_offset;  // < 0: no mask
} p;

const float kLowest = -3.402823466e38;  // below every finite input; exp(kLowest - m) is 0

void main() {
  for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
    uint base = row * p.cols;
    uint valid = p.cols;  // columns [0, valid) take part
    if (p.causal_offset >= 0) valid = min(p.cols, row % p.seq + uint(p.causal_offset) + 1u);

    float m = kLowest, s = 0.0;
    for (uint c = gl_LocalInvocationID.x; c < valid; c += gl_WorkGroupSize.x) {
      float v = p.scale * TO_F32(T, x[base + c]);
      if (v > m) {
        s = s * exp(m - v) + 1.0;
        m = v;
      } else {
        s += exp(v - m);
      }
    }
    float row_max = workgroup_max(m);
    float inv_sum = 1.0 / workgroup_sum(s * exp(m - row_max));

    for (uint c = gl_LocalInvocationID.x; c < p.cols; c += gl_WorkGroupSize.x) {
      float prob = c < valid ? exp(p.scale * TO_F32(T, x[base + c]) - row_max) * inv_sum : 0.0;
      y[base + c] = FROM_F32(T, prob);
    }
  }
}
