// 8 values of a key or value row as loaded (16 bytes of f16, or 32 of f32), then as floats: load8 over the including
// shader's uvec4 buffers k16 and v16, holding f16 values where KV8_HALF is defined and f32 otherwise (decoding's
// attention: attention_split.comp, and decode_layer.comp's stage B). A load and its unpacking apart, so that a
// batch of loads is issued before any of them is used.
#if defined(KV8_HALF)
#define Raw8 uvec4
Raw8 load8(bool from_k, uint e) { return from_k ? k16[e / 8u] : v16[e / 8u]; }
void unpack8(Raw8 r, out vec4 lo, out vec4 hi) {
  lo = vec4(unpackHalf2x16(r.x), unpackHalf2x16(r.y));
  hi = vec4(unpackHalf2x16(r.z), unpackHalf2x16(r.w));
}
#else
struct Raw8 { uvec4 lo, hi; };
Raw8 load8(bool from_k, uint e) {
  return from_k ? Raw8(k16[e / 4u], k16[e / 4u + 1u]) : Raw8(v16[e / 4u], v16[e / 4u + 1u]);
}
void unpack8(Raw8 r, out vec4 lo, out vec4 hi) {
  lo = uintBitsToFloat(r.lo);
  hi = uintBitsToFloat(r.hi);
}
#endif
