#include "tensor/quant.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "error.h"
#include "util/parallel.h"

namespace ls {

const std::array<float, 16> kNf4Levels = {
    -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f, -0.28444138169288635f,
    -0.18477343022823334f, -0.09105003625154495f, 0.0f, 0.07958029955625534f, 0.16093020141124725f,
    0.24611230194568634f, 0.33791524171829224f, 0.44070982933044434f, 0.5626170039176941f,
    0.7229568362236023f, 1.0f};

const char* quant_name(QuantType t) {
  switch (t) {
    case QuantType::none: return "none";
    case QuantType::nf4: return "nf4";
    case QuantType::q8: return "q8";
  }
  return "?";
}

std::optional<QuantType> parse_quant(const std::string& name) {
  if (name == "nf4") return QuantType::nf4;
  if (name == "q8") return QuantType::q8;
  if (name.empty() || name == "none" || name == "bf16") return QuantType::none;
  return std::nullopt;
}

namespace {

std::array<float, 256> make_dynamic_map() {
  // create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8): for exponent i, 2^i + 1
  // boundaries evenly spaced in [0.1, 1], their midpoints scaled by 10^(i-6), both signs; then 0 and 1;
  // sorted. Computed exactly and rounded once: bitsandbytes computes it in f32 with torch.linspace, whose
  // vectorized CPU kernel rounds differently with the CPU's vector width, so its values are within an
  // ulp of these and not the same on every machine (tests/tensor/quant_test).
  std::vector<float> data;
  for (int i = 0; i < 7; ++i) {
    const int n = (1 << i) + 1;
    const double scale = std::pow(10.0, double(i - 6));
    for (int j = 0; j + 1 < n; ++j) {
      const double lo = 0.1 + 0.9 * double(j) / double(n - 1), hi = 0.1 + 0.9 * double(j + 1) / double(n - 1);
      const float v = float(scale * (lo + hi) / 2.0);
      data.push_back(v);
      data.push_back(-v);
    }
  }
  data.push_back(0.0f);
  data.push_back(1.0f);
  std::sort(data.begin(), data.end());
  std::array<float, 256> map{};
  std::copy(data.begin(), data.end(), map.begin());
  return map;
}

// bitsandbytes' dQuantize<0>: a binary search over the sorted map from its middle, then the nearer of
// the two neighbours (the same comparisons, so the same code at every tie).
uint8_t quantize_dynamic(const std::array<float, 256>& code, float x) {
  int pivot = 127, upper_pivot = 255, lower_pivot = 0;
  float lower = -1.0f, upper = 1.0f;
  float val = code[size_t(pivot)];
  for (int i = 64; i > 0; i >>= 1) {
    if (x > val) {
      lower_pivot = pivot;
      lower = val;
      pivot += i;
    } else {
      upper_pivot = pivot;
      upper = val;
      pivot -= i;
    }
    val = code[size_t(pivot)];
  }
  if (upper_pivot == 255) upper = code[255];
  if (lower_pivot == 0) lower = code[0];
  if (x > val) return uint8_t((x > (upper + val) * 0.5f) ? upper_pivot : pivot);
  return uint8_t((x < (lower + val) * 0.5f) ? lower_pivot : pivot);
}

// bitsandbytes' dQuantizeNF4: the level whose interval holds x, the boundaries being the midpoints of
// neighbouring levels (a value on a boundary goes down).
uint8_t quantize_nf4(float x) {
  static const std::array<float, 15> mid = [] {
    std::array<float, 15> m{};
    for (size_t i = 0; i < 15; ++i) m[i] = float((double(kNf4Levels[i]) + double(kNf4Levels[i + 1])) / 2.0);
    return m;
  }();
  uint8_t c = 0;
  while (c < 15 && x > mid[c]) ++c;
  return c;
}

float block_absmax(std::span<const float> w, uint64_t b) {
  const uint64_t end = std::min<uint64_t>(w.size(), (b + 1) * kQuantBlock);
  float m = 0;
  for (uint64_t i = b * kQuantBlock; i < end; ++i) m = std::max(m, std::fabs(w[i]));
  return m;
}

}  // namespace

const std::array<float, 256>& dynamic_map_8bit() {
  static const std::array<float, 256> map = make_dynamic_map();
  return map;
}

QuantSections quantized_sections(QuantType t, uint64_t numel) {
  auto words = [](uint64_t bytes) { return std::max<uint64_t>(4, (bytes + 3) / 4 * 4); };
  const uint64_t blocks = (numel + kQuantBlock - 1) / kQuantBlock;
  switch (t) {
    case QuantType::none: return {};
    case QuantType::nf4:
      return {.codes = words((numel + 1) / 2), .absmax = words(blocks),
              .scales = words(4 * ((blocks + kQuantAbsmaxBlock - 1) / kQuantAbsmaxBlock))};
    case QuantType::q8: return {.codes = words(numel), .absmax = words(4 * blocks), .scales = 0};
  }
  return {};
}

uint64_t quantized_bytes(QuantType t, uint64_t numel, uint32_t element_bytes) {
  if (t == QuantType::none) return numel * element_bytes;
  const QuantSections s = quantized_sections(t, numel);
  return s.codes + s.absmax + s.scales;
}

QuantizedHost quantize(QuantType t, std::span<const float> w, unsigned threads) {
  if (t == QuantType::none) throw Error("quantize: no quantization type given");
  QuantizedHost q;
  q.type = t;
  q.numel = w.size();
  const uint64_t blocks = q.blocks();
  std::atomic<bool> finite = true;
  parallel_for(w.size(), [&](uint64_t first, uint64_t end) {
    for (uint64_t i = first; i < end; ++i)
      if (!std::isfinite(w[i])) finite = false;
  }, uint64_t(1) << 18, threads);
  if (!finite) throw Error("quantize: the weight holds a value that is not finite");

  if (t == QuantType::q8) {
    q.codes.resize(w.size());
    q.scales.resize(blocks);
    parallel_for(blocks, [&](uint64_t b0, uint64_t b1) {
      for (uint64_t b = b0; b < b1; ++b) {
        const float s = block_absmax(w, b) / 127.0f;
        q.scales[b] = s;
        const float inv = s > 0 ? 1.0f / s : 0.0f;
        const uint64_t end = std::min<uint64_t>(w.size(), (b + 1) * kQuantBlock);
        for (uint64_t i = b * kQuantBlock; i < end; ++i) {
          const float c = std::clamp(std::nearbyint(w[i] * inv), -127.0f, 127.0f);
          q.codes[i] = uint8_t(int8_t(c));
        }
      }
    }, 1024, threads);
    return q;
  }

  // nf4: the 4-bit codes with each block's f32 absmax...
  std::vector<float> absmax(blocks);
  q.codes.assign((w.size() + 1) / 2, 0);
  parallel_for(blocks, [&](uint64_t b0, uint64_t b1) {
    for (uint64_t b = b0; b < b1; ++b) {
      const float m = block_absmax(w, b);
      absmax[b] = m;
      const float inv = m > 0 ? 1.0f / m : 0.0f;  // bitsandbytes multiplies by the reciprocal
      const uint64_t end = std::min<uint64_t>(w.size(), (b + 1) * kQuantBlock);
      for (uint64_t i = b * kQuantBlock; i < end; ++i) {
        const uint8_t c = quantize_nf4(w[i] * inv);
        q.codes[i / 2] |= uint8_t(i % 2 == 0 ? c << 4 : c);
      }
    }
  }, 1024, threads);
  // ...then the absmax values, their mean removed, in 8 bits (quantize_blockwise, blocks of 256).
  double sum = 0;
  for (float m : absmax) sum += m;
  q.offset = float(sum / double(std::max<uint64_t>(1, blocks)));
  const auto& map = dynamic_map_8bit();
  const uint64_t groups = (blocks + kQuantAbsmaxBlock - 1) / kQuantAbsmaxBlock;
  q.absmax_codes.resize(blocks);
  q.scales.resize(groups);
  parallel_for(groups, [&](uint64_t g0, uint64_t g1) {
    for (uint64_t g = g0; g < g1; ++g) {
      const uint64_t begin = g * kQuantAbsmaxBlock, end = std::min<uint64_t>(blocks, begin + kQuantAbsmaxBlock);
      float m = 0;
      for (uint64_t b = begin; b < end; ++b) m = std::max(m, std::fabs(absmax[b] - q.offset));
      q.scales[g] = m;
      const float inv = m > 0 ? 1.0f / m : 0.0f;
      for (uint64_t b = begin; b < end; ++b) q.absmax_codes[b] = quantize_dynamic(map, (absmax[b] - q.offset) * inv);
    }
  }, 64, threads);
  return q;
}

float block_scale(const QuantizedHost& q, uint64_t b) {
  if (q.type == QuantType::q8) return q.scales[b];
  // dequantize_blockwise(qabsmax, state2) + offset: a product and a sum, each rounded to f32 (the kernels
  // mark theirs precise, so no device fuses them).
  const float scaled = dynamic_map_8bit()[q.absmax_codes[b]] * q.scales[b / kQuantAbsmaxBlock];
  return scaled + q.offset;
}

std::vector<float> dequantize(const QuantizedHost& q) {
  std::vector<float> w(q.numel);
  for (uint64_t b = 0; b < q.blocks(); ++b) {
    const float s = block_scale(q, b);
    const uint64_t end = std::min<uint64_t>(q.numel, (b + 1) * kQuantBlock);
    for (uint64_t i = b * kQuantBlock; i < end; ++i) {
      if (q.type == QuantType::q8)
        w[i] = float(int8_t(q.codes[i])) * s;
      else
        w[i] = kNf4Levels[(i % 2 == 0) ? q.codes[i / 2] >> 4 : q.codes[i / 2] & 15u] * s;
    }
  }
  return w;
}

}  // namespace ls
