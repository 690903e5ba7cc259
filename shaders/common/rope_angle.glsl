// The rotation angle's sine and cosine of shaders/rope.comp and rope_kv.comp, the same bits in both.
// (sin a, cos a) to about 1 ulp for |a| < 2^22, the same on every device. GLSL's sin/cos only promise
// 2^-11 absolute error, and only inside [-pi, pi]; HF's angles reach the context length.
// a = k pi/2 + r with |r| <= pi/4 (Cody-Waite): pi/2 = C1 + C2 + C3 where C1, C2 have 13 significant
// bits and k = kh + kl with 11 significant bits each, so every k*C1 and k*C2 product is exact.
// `precise` keeps the compiler from fusing or reordering these steps. Then Cephes' sinf/cosf
// polynomials on [-pi/4, pi/4] and the quadrant k mod 4.
vec2 sin_cos(float a) {
  const float C1 = 1.570556640625, C2 = 2.396702766418457e-4, C3 = 1.5893254712295857e-08;
  precise float k = roundEven(a * 0.63661977236758134);  // 2 / pi
  precise float kh = 2048.0 * trunc(k * (1.0 / 2048.0));
  precise float kl = k - kh;
  precise float r = a - kh * C1;
  r = r - kl * C1;
  r = r - kh * C2;
  r = r - kl * C2;
  r = r - k * C3;
  float z = r * r;
  float s = r + r * z * ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1);
  float c = 1.0 - 0.5 * z + z * z * ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2);
  int q = int(k) & 3;
  if (q == 0) return vec2(s, c);
  if (q == 1) return vec2(c, -s);
  if (q == 2) return vec2(-s, -c);
  return vec2(-c, s);
}

// A pair (x0, x1) = (x[i], x[i + D/2]) rotated by the angle whose (sin, cos) is sc (negate sc.x for the backward),
// each product rounded apart (`precise`: no fused multiply-add), so that every kernel that rotates (shaders/rope.comp,
// matmul_splitk_reduce.comp's ROPE) gives the same bits.
vec2 rope_rotate(const in float x0, const in float x1, const in vec2 sc) {
  precise float y0 = x0 * sc.y - x1 * sc.x;
  precise float y1 = x1 * sc.y + x0 * sc.x;
  return vec2(y0, y1);
}
