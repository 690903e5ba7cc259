#pragma once
// Quantized weights for QLoRA (docs/design.md "Quantized bases"): the frozen projection weights of a base
// model kept in 4 or 8 bits, dequantized by the kernels that read them. Host side: the formats, their
// sizes, and quantize/dequantize as reference. Element order is the weight's row-major order flattened,
// as bitsandbytes flattens it; blocks run across row ends.
//
//   nf4  bitsandbytes' NF4 with double quantization (quantize_4bit(quant_type="nf4",
//        compress_statistics=True, blocksize=64), what PEFT's QLoRA recipe loads): 16 levels of a normal
//        distribution scaled by each block's absmax; two values a byte, the first in the high nibble. The
//        absmax values are quantized again: their mean (offset) removed, then bitsandbytes' 8-bit dynamic
//        map in blocks of 256 with an f32 absmax each. 0.516 bytes a weight.
//   q8   8-bit symmetric in blocks of 64: code = round(w / s), s = absmax / 127 (an f32 per block). The
//        more exact choice: 1.0625 bytes a weight.
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ls {

enum class QuantType : uint8_t { none, nf4, q8 };

const char* quant_name(QuantType t);  // "none", "nf4", "q8"
// "nf4" | "q8" | "none" (also "" and "bf16": none); nullopt for anything else.
std::optional<QuantType> parse_quant(const std::string& name);

constexpr uint32_t kQuantBlock = 64;          // weights per absmax
constexpr uint32_t kQuantAbsmaxBlock = 256;   // nf4: absmax values per second-level scale

// bitsandbytes' NF4 levels (functional.get_4bit_type("nf4")), index = the 4-bit code.
extern const std::array<float, 16> kNf4Levels;
// bitsandbytes' signed 8-bit dynamic map (functional.create_dynamic_map(signed=True)), sorted; 256 values.
const std::array<float, 256>& dynamic_map_8bit();

// The device buffers of a packed weight of `numel` values (ops/quant.h uploads each as its own tensor, padded
// to whole 4-byte words, at least one): codes, absmax (nf4: its 8-bit codes; q8: the f32 scales) and the
// nf4 second-level scales (0 for q8).
struct QuantSections {
  uint64_t codes = 0, absmax = 0, scales = 0;
};
QuantSections quantized_sections(QuantType t, uint64_t numel);
// Their sum (for none: numel * element_bytes).
uint64_t quantized_bytes(QuantType t, uint64_t numel, uint32_t element_bytes = 2);

// A weight in packed form on the host, the layout the device keeps.
struct QuantizedHost {
  QuantType type = QuantType::none;
  uint64_t numel = 0;
  std::vector<uint8_t> codes;          // nf4: (numel + 1) / 2 bytes; q8: numel int8 values
  // nf4: one 8-bit code a block into dynamic_map_8bit(), their f32 scales (one per 256 blocks), and the
  // offset added back. q8: absmax[block] / 127 in `scales`, nothing else.
  std::vector<uint8_t> absmax_codes;
  std::vector<float> scales;
  float offset = 0;
  uint64_t blocks() const { return (numel + kQuantBlock - 1) / kQuantBlock; }
};

// Quantizes f32 values (the weight as loaded, widened exactly) as bitsandbytes does for nf4; threads > 1
// splits the blocks over that many threads (the result does not depend on it).
QuantizedHost quantize(QuantType t, std::span<const float> w, unsigned threads = 1);
// The dequantized values, as the kernels compute them (f32).
std::vector<float> dequantize(const QuantizedHost& q);
// The absmax of block b after double quantization (nf4) or the scale (q8), as the kernels compute it.
float block_scale(const QuantizedHost& q, uint64_t b);

}  // namespace ls
