// The subgroup-scope tensor-core operations of shaders/matmul_coopmat.comp and flash_attention_coopmat.comp,
// spelled for GL_NV_cooperative_matrix (the default) or, with COOPMAT_KHR, for GL_KHR_cooperative_matrix: the
// same f16 × f16 → f32 16×16×16 products on subgroups of 32, for GPUs without the NV extension (AMD's, which
// offer the KHR one; ops pick a kernel's KHR row where vk::Device::coopmat_khr()). The two differ only in
// spelling: KHR matrices name their use (A, B or accumulator) and loads take a layout constant, not a bool.
//   CM_A, CM_B    f16 operands;  CM_ACC  f32 accumulator;  CM_ACC16  f16 accumulator (C stored as f16)
//   CM_ROW, CM_COL  the layouts cm_load and cm_store take (element (i, j) at i·stride + j, or j·stride + i)
//   cm_load(M, BUF, ELEMENT, STRIDE, LAYOUT), cm_store(...), cm_mul_add(A, B, C) = A·B + C
// ELEMENT and STRIDE count BUF's own elements (a uvec4 array holds 8 halves an element), as both specify.
#if defined(COOPMAT_KHR)
#extension GL_KHR_cooperative_matrix : require
#define CM_A coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA>
#define CM_B coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB>
#define CM_ACC coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>
#define CM_ACC16 coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>
#define CM_ROW gl_CooperativeMatrixLayoutRowMajor
#define CM_COL gl_CooperativeMatrixLayoutColumnMajor
#define cm_load(M, BUF, ELEMENT, STRIDE, LAYOUT) coopMatLoad(M, BUF, ELEMENT, STRIDE, LAYOUT)
#define cm_store(M, BUF, ELEMENT, STRIDE, LAYOUT) coopMatStore(M, BUF, ELEMENT, STRIDE, LAYOUT)
#define cm_mul_add(A, B, C) coopMatMulAdd(A, B, C)
#else
#extension GL_NV_cooperative_matrix : require
#define CM_A fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define CM_B fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define CM_ACC fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#define CM_ACC16 fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define CM_ROW false
#define CM_COL true
#define cm_load(M, BUF, ELEMENT, STRIDE, LAYOUT) coopMatLoadNV(M, BUF, ELEMENT, STRIDE, LAYOUT)
#define cm_store(M, BUF, ELEMENT, STRIDE, LAYOUT) coopMatStoreNV(M, BUF, ELEMENT, STRIDE, LAYOUT)
#define cm_mul_add(A, B, C) coopMatMulAddNV(A, B, C)
#endif
