#pragma once
// A quantized weight on the device (QLoRA; formats in tensor/quant.h, docs/design.md "Quantized bases"): the
// packed form ops/quant.h uploads and the products read (ops/matmul.h's WeightOperand).
#include <cstdint>

#include "tensor/quant.h"
#include "tensor/tensor.h"

namespace ls::ops {

// A weight [rows, cols] in packed form. The buffers are i32 tensors over bytes (padded to whole words).
struct QuantWeight {
  QuantType type = QuantType::none;
  uint32_t rows = 0, cols = 0;
  Tensor codes;    // nf4: two codes a byte, the first in the high nibble; q8: int8 codes
  Tensor absmax;   // nf4: a block's 8-bit absmax code, four to a word; q8: a block's scale (f32)
  Tensor scales;   // nf4: f32, one per 256 blocks; q8: a 4-byte placeholder
  Tensor map;      // nf4: the 8-bit dynamic map (256 f32, shared by every weight); q8: a placeholder
  float offset = 0;  // nf4: the mean absmax, added back
  bool defined() const { return type != QuantType::none; }
  uint64_t bytes() const;  // device bytes of the packed form (the map, shared, not counted)
};

// Whether the tensor-core products read a quantized weight of `cols` columns in packed form, dequantizing each
// tile as they load it (shaders/matmul_coopmat2.comp's Q_NF4 / Q_Q8; devices with VK_NV_cooperative_matrix2,
// whole blocks a row: cols a multiple of 64), instead of dequantizing the weight into the recording's weight
// scratch before each product (shaders/dequant.comp, at ~1.5 TB/s). Only with LORASTUDIO_QUANT_IN_GEMM=1: on
// the H100 (session 16, s16a) the packed kernel made the 7B nf4 step 187.8 ms against 111.7 with the scratch
// (bf16 base 93.1), the 0.5B step 31.7 against 28.0: the decode callback runs per element, for every workgroup
// along M, where the dequantization pass writes each weight once; the memory held was the same (7.78 GiB).
bool quant_in_gemm(bool coopmat2, uint32_t cols);

}  // namespace ls::ops
