// Reading a quantized weight (engine/tensor/quant.h; ops/quant.h): element e of the weight flattened
// row-major, its block b = e / 64. Expects the binding numbers QB_ABSMAX, QB_SCALES and QB_MAP, and QB_CODES
// unless the kernel reads the codes itself (shaders/matmul_coopmat2.comp: through its decode function), and
// Q_NF4 or Q_Q8. Both formats declare all four bindings (q8 leaves the last two unread) so that one
// op binds them alike. Bit-equal to ls::dequantize: block_scale's product and sum each rounded as in ls::block_scale,
// then one product. Every invocation of the workgroup calls quant_init() first (it holds a barrier): NF4's
// 16 values live in shared memory, since a constant array indexed by a loaded code is put in per-thread
// local memory by NVIDIA's compiler (seen on the H100: dequantizing ran at ~0.7 TB/s, decoding at ~0.13).
#ifdef QB_CODES
layout(binding = QB_CODES) readonly buffer QCodes { uint qcodes[]; };  // bytes, four to a word
#endif
#if defined(Q_NF4)
layout(binding = QB_ABSMAX) readonly buffer QAbsmax { uint qabsmax[]; };  // a block's 8-bit absmax code
layout(binding = QB_SCALES) readonly buffer QScales { float qscales[]; };  // one per 256 blocks
layout(binding = QB_MAP) readonly buffer QMap { float qmap[]; };  // bitsandbytes' dynamic map, 256 values

const float kNf4Values[16] = float[16](-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
                                       -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
                                       0.07958029955625534, 0.16093020141124725, 0.24611230194568634,
                                       0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
                                       0.7229568362236023, 1.0);
shared float kNf4[16];
#if defined(QUANT_SHARED_MAP)
shared float map_s[256];  // the dynamic map, read once per workgroup (a few-row product looks it up a piece)
#define QUANT_MAP(code) map_s[code]
#else
#define QUANT_MAP(code) qmap[code]
#endif
void quant_init() {
  if (gl_LocalInvocationIndex < 16u) kNf4[gl_LocalInvocationIndex] = kNf4Values[gl_LocalInvocationIndex];
#if defined(QUANT_SHARED_MAP)
  for (uint i = gl_LocalInvocationIndex; i < 256u; i += gl_WorkGroupSize.x) map_s[i] = qmap[i];
#endif
  barrier();
}

// Block b's scale from its word of absmax codes and its second-level scale (the arguments loaded by the caller).
float nf4_block_scale(uint absmax_word, uint b, float scale2, float offset) {
  uint code = (absmax_word >> (8u * (b & 3u))) & 0xffu;
  precise float scaled = QUANT_MAP(code) * scale2;  // two roundings, never fused, as on the host
  precise float s = scaled + offset;
  return s;
}
float block_scale(uint b, float offset) { return nf4_block_scale(qabsmax[b >> 2], b, qscales[b >> 8], offset); }
// A piece: 8 values (elements 8i .. 8i+7 of the flattened weight), one word of codes.
void piece_values(uvec2 piece, out vec4 lo, out vec4 hi) {
  const uint w = piece.x;
  lo = vec4(kNf4[bitfieldExtract(w, 4, 4)], kNf4[bitfieldExtract(w, 0, 4)], kNf4[bitfieldExtract(w, 12, 4)],
            kNf4[bitfieldExtract(w, 8, 4)]);
  hi = vec4(kNf4[bitfieldExtract(w, 20, 4)], kNf4[bitfieldExtract(w, 16, 4)], kNf4[bitfieldExtract(w, 28, 4)],
            kNf4[bitfieldExtract(w, 24, 4)]);
}
// Two values a byte, the first in the high nibble: value i (0 .. 7) of a word of codes.
float word_value(uint word, uint i) {
  uint byte = (word >> (8u * (i >> 1))) & 0xffu;
  return kNf4[(i & 1u) == 0u ? byte >> 4 : byte & 15u];
}
const uint kQuantValuesPerWord = 8u;
#ifdef QB_CODES
float code_value(uint e) { return word_value(qcodes[e >> 3], e & 7u); }
// The 8 values of word w (elements 8w .. 8w+7).
void code_values8(uint w, out float v[8]) {
  uint word = qcodes[w];
  for (uint j = 0u; j < 4u; ++j) {
    uint byte = (word >> (8u * j)) & 0xffu;
    v[2u * j] = kNf4[byte >> 4];
    v[2u * j + 1u] = kNf4[byte & 15u];
  }
}
#endif
const uint kQuantWordsPer8 = 1u;  // words of codes that hold 8 values
#elif defined(Q_Q8)
layout(binding = QB_ABSMAX) readonly buffer QAbsmax { float qabsmax[]; };  // a block's scale, absmax / 127
layout(binding = QB_SCALES) readonly buffer QScales { float qscales[]; };
layout(binding = QB_MAP) readonly buffer QMap { float qmap[]; };

void quant_init() {}
float block_scale(uint b, float offset) { return qabsmax[b]; }
// A piece: 8 values (elements 8i .. 8i+7 of the flattened weight), two words of codes.
void piece_values(uvec2 piece, out vec4 lo, out vec4 hi) {
  lo = vec4(ivec4(piece.x << 24, piece.x << 16, piece.x << 8, piece.x) >> 24);
  hi = vec4(ivec4(piece.y << 24, piece.y << 16, piece.y << 8, piece.y) >> 24);
}
// Value i (0 .. 3) of a word of int8 codes.
float word_value(uint word, uint i) { return float(int(word << (24u - 8u * i)) >> 24); }
const uint kQuantValuesPerWord = 4u;
#ifdef QB_CODES
float code_value(uint e) { return word_value(qcodes[e >> 2], e & 3u); }
void code_values8(uint w, out float v[8]) {  // w: the first of two words
  for (uint h = 0u; h < 2u; ++h) {
    uint word = qcodes[w + h];
    for (uint j = 0u; j < 4u; ++j) v[4u * h + j] = word_value(word, j);
  }
}
#endif
const uint kQuantWordsPer8 = 2u;
#else
#error "define Q_NF4 or Q_Q8"
#endif
