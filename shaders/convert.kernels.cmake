# Dtype conversion y = x between f32, f16 and bf16, bit-exact on the raw bits (S: source, D: destination).
foreach(s f32 f16 bf16)
  foreach(d f32 f16 bf16)
    if(s STREQUAL d)
      ls_kernel(convert_${s}_to_${d} convert.comp S=${s} D=${d} COPY)
    else()
      ls_kernel(convert_${s}_to_${d} convert.comp S=${s} D=${d})
    endif()
  endforeach()
endforeach()
# Three f32 matrices' columns side by side in one f16 or f32 matrix (ops::concat_cols_forward).
ls_kernel(concat3_f32_to_f16 convert.comp S=f32 D=f16 CONCAT3)
ls_kernel(concat3_f32_to_f32 convert.comp S=f32 D=f32 CONCAT3)
