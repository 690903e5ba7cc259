// Eight f16 values a 16-byte load, for memory-bound kernels over f16 tensors (their V8 rows): one 2-byte element a
// thread keeps too few bytes in flight to stream a tensor at the memory's speed (on the H200, session 33: SwiGLU's
// forward and backward at the 0.5B shape's B8 took 82 µs a layer, ~3.8 TB/s, where they had taken ~121). Such a
// kernel declares its buffers a second time as uvec4 (same binding; every binding starts 16-byte aligned,
// minStorageBufferOffsetAlignment), runs whole groups of eight through these and the rest one element at a time,
// both through one per-element function.
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require

// Values 2c and 2c + 1 of a 16-byte group, as f32.
vec2 v8_pair(const in uvec4 v, const in uint c) { return vec2(unpackFloat2x16(v[c])); }
// Two f32 values rounded to f16 (as float16_t() rounds), packed.
uint v8_pack(const in float a, const in float b) { return packFloat2x16(f16vec2(float16_t(a), float16_t(b))); }
