#version 450
#extension GL_GOOGLE_include_directive : require
// dx = scale * y * (dy - sum_c dy * y), per row of [rows, cols], for y = softmax(scale * x).
// Causal-masked entries have y = 0, so dx = 0 there with no mask needed. One workgroup per row (a
// row-stride loop takes the rest); one workgroup_sum per row. dx may alias dy or y: every element is
// read and then written by the same invocation.
#include "common/types.glsl"
#include "common/reduce.glsl"
layout(local_size_x_id = 0) in;

layout(binding = 0) readonly buffer DY { STORE(T) dy[]; };
layout(binding = 1) readonly buffer Y { STORE(T) y[]; };
layout(binding = 2) writeonly buffer DX { STORE(T) dx[]; };
layout(push_constant) uniform Params { uint rows; uint cols; float scale; } p;

void main() {
  for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
    uint base = row * p.cols;
    float partial = 0.0;
    for (uint c = gl_LocalInvocationID.x; c < p.cols; c += gl_WorkGroupSize.x)
      partial += TO_F32(T, dy[base + c]) * TO_F32(T, y[base + c]);
    float dot = workgroup_sum(partial);
    for (uint c = gl_LocalInvocationID.x; c < p.cols; c += gl_WorkGroupSize.x) {
      float yv = TO_F32(T, y[base + c]);
      dx[base + c] = FROM_F32(T, p.scale * yv * (TO_F32(T, dy[base + c]) - dot));
    }
  }
}
