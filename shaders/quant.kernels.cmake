# Quantized weights (QLoRA, engine/tensor/quant.h). Q: the format (nf4, q8).
# Dequantization into a plain weight, D the output dtype: the operand of the products for many rows.
foreach(q nf4 q8)
  string(TOUPPER ${q} Q)
  foreach(d f32 f16 bf16)
    string(TOUPPER ${d} DU)
    ls_kernel(dequant_${q}_${d} dequant.comp Q_${Q} D=${d} D_${DU})
  endforeach()
  # The few-rows product (decoding) on the packed weight; A_T activations, W_T the bias, C_T the output.
  foreach(a f32 f16)
    foreach(w f32 f16)
      foreach(c f32 f16)
        ls_kernel(qmatvec_${q}_${a}_${w}_${c} quant_matvec.comp Q_${Q} A_T=${a} W_T=${w} C_T=${c})
        # K a multiple of 64: 16-byte loads of codes, several outputs a subgroup.
        ls_kernel(qmatvec16_${q}_${a}_${w}_${c} quant_matvec16.comp Q_${Q} A_T=${a} W_T=${w} C_T=${c})
      endforeach()
    endforeach()
  endforeach()
endforeach()
