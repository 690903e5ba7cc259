# A decoded token's whole layer in one dispatch of persistent workgroups (shaders/decode_layer.comp): activations
# <act> (q, the KV cache, the attention's output and act(gate)·up), weights <w> (the q/k/v biases of the same
# type); _silu / _gelu: the MLP's activation.
foreach(act f32 f16)
  foreach(w f32 f16 bf16)
    set(defs ACT_T=${act} W_T=${w})
    if(act STREQUAL "f16")
      list(APPEND defs ACT_IS_F16=1)
    endif()
    if(w STREQUAL "f32")
      list(APPEND defs W_IS_F32=1)
    elseif(w STREQUAL "bf16")
      list(APPEND defs W_IS_BF16=1)
    endif()
    ls_kernel(decode_layer_silu_${act}_${w} decode_layer.comp ${defs} GLU_SILU=1)
    ls_kernel(decode_layer_gelu_${act}_${w} decode_layer.comp ${defs} GLU_GELU=1)
  endforeach()
endforeach()
