// The outputs of the gated-MLP kernels (shaders/{silu,gelu_tanh}_mul{,_backward}.comp): of the inputs'
// type T, or with O_F16 (T = f32) in f16, rounded as ops/convert rounds, bit for bit: the tensor-core
// products that read them would convert them to f16 themselves (model/layer_acts.h, F16Operands).
#if defined(O_F16)
#include "common/f16_bits.glsl"
#define STORE_OUT uint16_t
#define OUT(f) uint16_t(f16_from_f32(floatBitsToUint(f)))
#else
#define STORE_OUT STORE(T)
#define OUT(f) FROM_F32(T, f)
#endif
