#pragma once
// The members of a Params struct (an op's push constants) with their offsets and types, read without naming
// them: the struct must be an aggregate of 4-byte scalars (uint32_t, int32_t, float), as every Params struct
// dispatched through Recorder::dispatch is (one with arrays goes through dispatch_raw). The recorder compares
// them with the kernel's push-constant block read from its SPIR-V (vk/push_block.h).
//
// How: the number of members is the most initializers `P{...}` takes of a value that converts to any
// arithmetic type; a structured binding of that many names then gives each member's address and type.
#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

#include "vk/push_block.h"

namespace ls::vk {

namespace params_detail {

struct AnyScalar {
  template <class T>
    requires std::is_arithmetic_v<T>
  operator T() const;  // never called: only asked whether P can be initialized from it
};

template <class P, size_t... I>
constexpr bool initializes(std::index_sequence<I...>) {
  return requires { P{(void(I), AnyScalar{})...}; };
}

template <class P, size_t N = 0>
constexpr size_t member_count() {
  if constexpr (N < 32 && initializes<P>(std::make_index_sequence<N + 1>())) return member_count<P, N + 1>();
  else return N;
}

template <class P, class M>
Scalar scalar_of(const P& p, const M& member) {
  using T = std::remove_cvref_t<M>;
  static_assert(std::is_arithmetic_v<T> && sizeof(T) == 4, "a Params member that is not a 4-byte scalar");
  const ScalarKind kind = std::is_floating_point_v<T> ? ScalarKind::f32
                          : std::is_signed_v<T>       ? ScalarKind::i32
                                                      : ScalarKind::u32;
  const auto offset = reinterpret_cast<const std::byte*>(&member) - reinterpret_cast<const std::byte*>(&p);
  return {uint32_t(offset), kind};
}

template <class P, class... M>
std::vector<Scalar> scalars_of(const P& p, const M&... members) {
  return {scalar_of(p, members)...};
}

template <class P>
std::vector<Scalar> members_of(const P& params) {
  constexpr size_t count = member_count<P>();
  static_assert(std::is_aggregate_v<P> && count >= 1 && count <= 24 && count * 4 == sizeof(P),
                "a Params struct must be an aggregate of up to 24 4-byte scalars without padding (use dispatch_raw)");
  if constexpr (count == 1) {
    const auto& [a] = params;
    return scalars_of(params, a);
  } else if constexpr (count == 2) {
    const auto& [a, b] = params;
    return scalars_of(params, a, b);
  } else if constexpr (count == 3) {
    const auto& [a, b, c] = params;
    return scalars_of(params, a, b, c);
  } else if constexpr (count == 4) {
    const auto& [a, b, c, d] = params;
    return scalars_of(params, a, b, c, d);
  } else if constexpr (count == 5) {
    const auto& [a, b, c, d, e] = params;
    return scalars_of(params, a, b, c, d, e);
  } else if constexpr (count == 6) {
    const auto& [a, b, c, d, e, f] = params;
    return scalars_of(params, a, b, c, d, e, f);
  } else if constexpr (count == 7) {
    const auto& [a, b, c, d, e, f, g] = params;
    return scalars_of(params, a, b, c, d, e, f, g);
  } else if constexpr (count == 8) {
    const auto& [a, b, c, d, e, f, g, h] = params;
    return scalars_of(params, a, b, c, d, e, f, g, h);
  } else if constexpr (count == 9) {
    const auto& [a, b, c, d, e, f, g, h, i] = params;
    return scalars_of(params, a, b, c, d, e, f, g, h, i);
  } else if constexpr (count == 10) {
    const auto& [a, b, c, d, e, f, g, h, i, j] = params;
    return scalars_of(params, a, b, c, d, e, f, g, h, i, j);
  } else if constexpr (count == 11) {
    const auto& [a, b, c, d, e, f, g, h, i, j, k] = params;
    return scalars_of(params, a, b, c, d, e, f, g, h, i, j, k);
  } else if constexpr (count == 12) {
    const auto& [a, b, c, d, e, f, g, h, i, j, k, l] = params;
    return scalars_of(params, a, b, c, d, e, f, g, h, i, j, k, l);
  } else if constexpr (count == 13) {
    const auto& [a, b, c, d, e, f, g, h, i, j, k, l, m] = params;
    return scalars_of(params, a, b, c, d, e, f, g, h, i, j, k, l, m);
  } else if constexpr (count == 14) {
    const auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, n] = params;
    return scalars_of(params, a, b, c, d, e, f, g, h, i, j, k, l, m, n);
  } else if constexpr (count == 15) {
    const auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o] = params;
    return scalars_of(params, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o);
  } else if constexpr (count == 16) {
    const auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p] = params;
    return scalars_of(params, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p);
  } else if constexpr (count == 17) {
    const auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q] = params;
    return scalars_of(params, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q);
  } else if constexpr (count == 18) {
    const auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r] = params;
    return scalars_of(params, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r);
  } else if constexpr (count == 19) {
    const auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s] = params;
    return scalars_of(params, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s);
  } else if constexpr (count == 20) {
    const auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t] = params;
    return scalars_of(params, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t);
  } else if constexpr (count == 21) {
    const auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u] = params;
    return scalars_of(params, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u);
  } else if constexpr (count == 22) {
    const auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v] = params;
    return scalars_of(params, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v);
  } else if constexpr (count == 23) {
    const auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v, w] = params;
    return scalars_of(params, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v, w);
  } else if constexpr (count == 24) {
    const auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v, w, x] = params;
    return scalars_of(params, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v, w, x);
  }
}

}  // namespace params_detail

// P's members in declaration order, each with its byte offset and type (a scalar P: itself).
template <class P>
std::vector<Scalar> params_scalars(const P& params) {
  if constexpr (std::is_arithmetic_v<P>) return params_detail::scalars_of(params, params);
  else return params_detail::members_of(params);
}

}  // namespace ls::vk
