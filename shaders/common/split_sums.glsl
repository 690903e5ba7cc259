// A split product's partial sums [slices, rows·cols] added up at one element exactly as its reduce
// (shaders/matmul_splitk_reduce.comp) adds them: lane l of `lanes` sums slices l, l + lanes, ... in order from 0,
// then the lanes' sums are added in its fixed tree. So an op that reads the sums in place of the reduced tensor
// (ops::SplitSums) gets the same bits. GLSL passes no buffers to functions: DEFINE_SPLIT_SUM(NAME, BUFFER, SLICES,
// LANES) defines float NAME(uint i, uint slice) over BUFFER (f32), SLICES and LANES (at most 32) constants.
#define DEFINE_SPLIT_SUM(NAME, BUFFER, SLICES, LANES)                                 \
  float NAME(const in uint i, const in uint slice) {                                  \
    float lane_sum[32];                                                               \
    [[unroll]] for (uint l = 0u; l < LANES; ++l) {                                    \
      lane_sum[l] = 0.0;                                                              \
      for (uint s = l; s < SLICES; s += LANES) lane_sum[l] += BUFFER[s * slice + i];  \
    }                                                                                 \
    [[unroll]] for (uint h = LANES / 2u; h > 0u; h /= 2u)                             \
      [[unroll]] for (uint l = 0u; l < h; ++l) lane_sum[l] += lane_sum[l + h];        \
    return lane_sum[0];                                                               \
  }
