#include "model/gguf_quants.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "error.h"
#include "tensor/dtype.h"

// The float expressions below keep ggml-quants.c's operand order and types (float throughout, ints
// converted where ggml's C converts them): changing `w*x*l` into `w*(x*l)` changes bytes.

namespace ls::model {
namespace {

constexpr int kQK = 256;              // QK_K: values per k-quant super-block
constexpr float kGroupMaxEps = 1e-15f;  // GROUP_MAX_EPS

// ggml's nearest_int: round half to even through the float adder (valid for |x| < 2^22).
int nearest_int(float fval) {
  const float val = fval + 12582912.f;
  int32_t i;
  std::memcpy(&i, &val, 4);
  return (i & 0x007fffff) - 0x00400000;
}

void put_f16(std::byte* p, float v) {
  const uint16_t h = f32_to_f16(v);
  std::memcpy(p, &h, 2);
}
float get_f16(const std::byte* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

// make_qkx2_quants: L[i] in 0..nmax and (scale, -min) with x ≈ scale·L + min, min ≤ 0, minimising the
// weighted squared error over nstep + 1 candidate scales (rmin + rdelta·is + nmax) / (max − min).
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min, uint8_t* Laux,
                       float rmin, float rdelta, int nstep) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -min;
    return 0.f;
  }
  float iscale = float(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = uint8_t(std::max(0, std::min(nmax, l)));
    float diff = scale * float(L[i]) + min - x[i];
    diff = diff * diff;
    best_error += weights[i] * diff;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * float(is) + float(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * (x[i] - min));
      l = std::max(0, std::min(nmax, l));
      Laux[i] = uint8_t(l);
      const float w = weights[i];
      sum_l += w * float(l);
      sum_l2 += w * float(l) * float(l);
      sum_xl += w * float(l) * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * float(Laux[i]) + this_min - x[i];
        diff = diff * diff;
        cur_error += weights[i] * diff;
      }
      if (cur_error < best_error) {
        std::copy(Laux, Laux + n, L);
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

// make_qx_quants with rmse_type 1 and no importance weights: L[i] in 0..2·nmax−1 (offset by nmax) and the
// scale, weights x², the best of 19 candidate scales −(nmax + 0.1·is) / x_m by weighted least squares.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  float iscale = float(-nmax) / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    int l = nearest_int(iscale * x[i]);
    l = std::max(-nmax, std::min(nmax - 1, l));
    L[i] = int8_t(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * float(l);
    suml2 += w * float(l) * float(l);
  }
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(float(nmax) + 0.1f * float(is)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * x[i]);
      l = std::max(-nmax, std::min(nmax - 1, l));
      const float w = x[i] * x[i];
      sumlx += w * x[i] * float(l);
      suml2 += w * float(l) * float(l);
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * x[i]);
        L[i] = int8_t(nmax + std::max(-nmax, std::min(nmax - 1, l)));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// get_scale_min_k4: the 6-bit scale and min of sub-block j from the 12 packed bytes.
void get_scale_min_k4(int j, const uint8_t* q, uint8_t& d, uint8_t& m) {
  if (j < 4) {
    d = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    d = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    m = uint8_t((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
  }
}

void check_blocks(size_t n, size_t block, const char* type) {
  if (n % block != 0)
    throw Error(std::string("quantize ") + type + ": " + std::to_string(n) + " values are not whole blocks of " +
                std::to_string(block));
}

}  // namespace

void quantize_row_q8_0(const float* x, size_t n, std::byte* out) {
  check_blocks(n, 32, "q8_0");
  for (size_t b = 0; b < n / 32; ++b, x += 32, out += 34) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
    put_f16(out, d);
    for (int j = 0; j < 32; ++j) out[2 + j] = std::byte(uint8_t(int8_t(std::roundf(x[j] * id))));
  }
}

void quantize_row_q5_0(const float* x, size_t n, std::byte* out) {
  check_blocks(n, 32, "q5_0");
  for (size_t b = 0; b < n / 32; ++b, x += 32, out += 22) {
    float amax = 0, max = 0;
    for (int j = 0; j < 32; ++j)
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    const float d = max / -16, id = d != 0 ? 1.0f / d : 0.0f;
    put_f16(out, d);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const float x0 = x[j] * id, x1 = x[16 + j] * id;
      const auto xi0 = uint8_t(std::min<int>(31, int8_t(x0 + 16.5f)));
      const auto xi1 = uint8_t(std::min<int>(31, int8_t(x1 + 16.5f)));
      out[6 + j] = std::byte(uint8_t((xi0 & 0x0F) | ((xi1 & 0x0F) << 4)));
      qh |= uint32_t((xi0 & 0x10u) >> 4) << (j + 0);
      qh |= uint32_t((xi1 & 0x10u) >> 4) << (j + 16);
    }
    std::memcpy(out + 2, &qh, 4);
  }
}

namespace {

// q4_K (bits 4) and q5_K (bits 5): 8 sub-blocks of 32 with a 6-bit scale and min each. ggml's
// quantize_row_q4_K_ref (nmax 15, rmin -1, 20 steps) and quantize_row_q5_K_ref (nmax 31, rmin -0.5, 15 steps).
template <int kBits>
void quantize_row_k_with_min(const float* x, size_t n, std::byte* out) {
  constexpr int nmax = (1 << kBits) - 1, nstep = kBits == 4 ? 20 : 15;
  constexpr float rmin = kBits == 4 ? -1.f : -0.5f;
  constexpr size_t block_bytes = kBits == 4 ? 144 : 176, qs_offset = kBits == 4 ? 16 : 48;
  check_blocks(n, kQK, kBits == 4 ? "q4_K" : "q5_K");
  uint8_t L[kQK], Laux[32];
  float weights[32], mins[kQK / 32], scales[kQK / 32];
  for (size_t b = 0; b < n / kQK; ++b, x += kQK, out += block_bytes) {
    float max_scale = 0, max_min = 0;  // the min is subtracted: scales are never negative
    for (int j = 0; j < kQK / 32; ++j) {
      float sum_x2 = 0;
      for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
      const float av_x = std::sqrt(sum_x2 / 32);
      for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
      scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep);
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    uint8_t sc[12] = {};
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < kQK / 32; ++j) {
      const auto ls = uint8_t(std::min<uint8_t>(63, uint8_t(nearest_int(inv_scale * scales[j]))));
      const auto lm = uint8_t(std::min<uint8_t>(63, uint8_t(nearest_int(inv_min * mins[j]))));
      if (j < 4) {
        sc[j] = ls;
        sc[j + 4] = lm;
      } else {
        sc[j + 4] = uint8_t((ls & 0xF) | ((lm & 0xF) << 4));
        sc[j - 4] |= uint8_t((ls >> 4) << 6);
        sc[j - 0] |= uint8_t((lm >> 4) << 6);
      }
    }
    put_f16(out, max_scale / 63.f);
    put_f16(out + 2, max_min / 63.f);
    std::memcpy(out + 4, sc, 12);
    const float d_all = get_f16(out), dmin_all = get_f16(out + 2);
    for (int j = 0; j < kQK / 32; ++j) {
      uint8_t s, m;
      get_scale_min_k4(j, sc, s, m);
      const float d = d_all * float(s);
      if (d == 0) continue;
      const float dm = dmin_all * float(m);
      for (int i = 0; i < 32; ++i) {
        const int l = nearest_int((x[32 * j + i] + dm) / d);
        L[32 * j + i] = uint8_t(std::max(0, std::min(nmax, l)));
      }
    }
    // Byte l of each 32-byte group: sub-block 2g in the low nibble, 2g + 1 in the high one; q5_K keeps
    // the fifth bits in qh (bit 2g of qh[l] for sub-block 2g, 2g + 1 for 2g + 1).
    std::byte* q = out + qs_offset;
    uint8_t qh[32] = {};
    for (int j = 0, g = 0; j < kQK; j += 64, q += 32, ++g)
      for (int l = 0; l < 32; ++l) {
        int l1 = L[j + l], l2 = L[j + l + 32];
        if (l1 > 15) l1 -= 16, qh[l] = uint8_t(qh[l] | (1 << (2 * g)));
        if (l2 > 15) l2 -= 16, qh[l] = uint8_t(qh[l] | (2 << (2 * g)));
        q[l] = std::byte(uint8_t(l1 | (l2 << 4)));
      }
    if (kBits == 5) std::memcpy(out + 16, qh, 32);
  }
}

}  // namespace

void quantize_row_q4_k(const float* x, size_t n, std::byte* out) { quantize_row_k_with_min<4>(x, n, out); }
void quantize_row_q5_k(const float* x, size_t n, std::byte* out) { quantize_row_k_with_min<5>(x, n, out); }

void quantize_row_q6_k(const float* x, size_t n, std::byte* out) {
  check_blocks(n, kQK, "q6_K");
  int8_t L[kQK];
  float scales[kQK / 16];
  for (size_t b = 0; b < n / kQK; ++b, x += kQK, out += 210) {
    std::byte* ql = out;
    std::byte* qh = out + 128;
    std::byte* sc = out + 192;
    std::byte* dp = out + 208;
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < kQK / 16; ++ib) {
      const float scale = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
      scales[ib] = scale;
      if (std::fabs(scale) > max_abs_scale) {
        max_abs_scale = std::fabs(scale);
        max_scale = scale;
      }
    }
    if (max_abs_scale < kGroupMaxEps) {
      std::memset(out, 0, 210);
      continue;
    }
    const float iscale = -128.f / max_scale;
    put_f16(dp, 1 / iscale);
    int8_t s8[kQK / 16];
    for (int ib = 0; ib < kQK / 16; ++ib) s8[ib] = int8_t(std::min(127, nearest_int(iscale * scales[ib])));
    std::memcpy(sc, s8, 16);
    const float d_all = get_f16(dp);
    for (int j = 0; j < kQK / 16; ++j) {
      const float d = d_all * float(s8[j]);
      if (d == 0) continue;
      for (int i = 0; i < 16; ++i) {
        int l = nearest_int(x[16 * j + i] / d);
        l = std::max(-32, std::min(31, l));
        L[16 * j + i] = int8_t(l + 32);
      }
    }
    for (int j = 0; j < kQK; j += 128, ql += 64, qh += 32)
      for (int l = 0; l < 32; ++l) {
        const int q1 = L[j + l + 0] & 0xF, q2 = L[j + l + 32] & 0xF, q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
        ql[l + 0] = std::byte(uint8_t(q1 | (q3 << 4)));
        ql[l + 32] = std::byte(uint8_t(q2 | (q4 << 4)));
        qh[l] = std::byte(uint8_t((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                                  ((L[j + l + 96] >> 4) << 6)));
      }
  }
}

void quantize_row(gguf::TensorType type, const float* x, size_t n, std::byte* out) {
  switch (type) {
    case gguf::TensorType::q8_0: return quantize_row_q8_0(x, n, out);
    case gguf::TensorType::q5_0: return quantize_row_q5_0(x, n, out);
    case gguf::TensorType::q4_k: return quantize_row_q4_k(x, n, out);
    case gguf::TensorType::q5_k: return quantize_row_q5_k(x, n, out);
    case gguf::TensorType::q6_k: return quantize_row_q6_k(x, n, out);
    default: throw Error(std::string("quantize: no quantizer for GGUF type ") + gguf::type_traits(type).name);
  }
}

}  // namespace ls::model
