// The gated MLPs' activations, shared by shaders/{silu,gelu_tanh}_mul{,_backward}.comp and the decode
// products that apply them (shaders/matvec_norm.comp), so that every path computes them alike.

// exp() only ever sees -|g|, so nothing overflows for any finite g (no inf/inf, no 0 * inf).
float sigmoid(float g) {
  float e = exp(-abs(g));
  return g >= 0.0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
}

const float kBeta = 0.7978845608028654;  // sqrt(2/pi)
const float kKappa = 0.044715;

// tanh with exp() only ever seeing -2|u|: no overflow for any finite u.
float tanh_safe(float u) {
  float e = exp(-2.0 * abs(u));
  float t = (1.0 - e) / (1.0 + e);
  return u >= 0.0 ? t : -t;
}

// silu(g) = g * sigmoid(g);  gelu_tanh(g) = 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3)))
float silu(float g) { return g * sigmoid(g); }
float gelu_tanh(float g) { return 0.5 * g * (1.0 + tanh_safe(kBeta * (g + kKappa * g * g * g))); }

// The gated MLPs' backward for one element: (d gate, d up) of y = act(g)·u from d = dy, g and u. Shared by
// shaders/{silu,gelu_tanh}_mul_backward.comp and the products that apply it in their epilogue
// (common/gemm_interface.glsl's GLU), so that both compute the same bits.
//   silu:      dup = dy·g·s,  dgate = dy·u·s·(1 + g·(1 - s)),  s = sigmoid(g)
//   gelu_tanh: dup = dy·0.5·g·(1 + t),
//              dgate = dy·u·(0.5·(1 + t) + 0.5·g·(1 - t²)·sqrt(2/pi)·(1 + 3·0.044715·g²)),
//              t = tanh(sqrt(2/pi)·(g + 0.044715·g³))
vec2 silu_mul_grads(const in float d, const in float g, const in float u) {
  const float s = sigmoid(g);
  return vec2(d * u * s * (1.0 + g * (1.0 - s)), d * g * s);
}
vec2 gelu_tanh_mul_grads(const in float d, const in float g, const in float u) {
  const float t = tanh_safe(kBeta * (g + kKappa * g * g * g));
  const float dgelu = 0.5 * (1.0 + t) + 0.5 * g * (1.0 - t * t) * kBeta * (1.0 + 3.0 * kKappa * g * g);
  return vec2(d * u * dgelu, d * 0.5 * g * (1.0 + t));
}
