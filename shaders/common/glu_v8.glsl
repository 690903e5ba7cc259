// Eight f16 values a 16-byte load for the gated-MLP kernels (shaders/{silu,gelu_tanh}_mul{,_backward}.comp),
// their f16-in, f16-out rows (V8): one element a thread read 2 bytes a load, too few bytes in flight to stream
// the tensors at the memory's speed. Each kernel declares its buffers a second time as uvec4 (same binding;
// every binding starts 16-byte aligned, minStorageBufferOffsetAlignment), runs its first n / 8 · 8 elements
// eight a thread through these, and the rest (n mod 8) one a thread; each element's arithmetic is written as
// the scalar path's.
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require

// Values 2c and 2c + 1 of a 16-byte group, as f32.
vec2 v8_pair(const in uvec4 v, const in uint c) { return vec2(unpackFloat2x16(v[c])); }
// Two f32 values rounded to f16 (as float16_t() rounds), packed.
uint v8_pack(const in float a, const in float b) { return packFloat2x16(f16vec2(float16_t(a), float16_t(b))); }
