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
