// Vectors of doubles with GCC's and Clang's vector extensions: element-wise
// arithmetic in the order written, so a kernel written with them gives
// bitwise what its scalar loop gives (the build does not contract to FMA,
// -ffp-contract=off). A kernel picks its width, e.g.
//   using Lanes = double __attribute__((vector_size(4 * sizeof(double))));
// and moves data with lanes::load and lanes::store, which take any
// alignment.
#pragma once

#include <cstddef>
#include <cstring>

namespace adgraph::lanes {

// How many doubles the target's widest vector registers hold.
#if defined(__AVX512F__)
inline constexpr int kWidest = 8;
#elif defined(__AVX__)
inline constexpr int kWidest = 4;
#else
inline constexpr int kWidest = 2;
#endif

template <class Vector>
inline Vector load(const double* p) {
  Vector v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class Vector>
inline void store(double* p, Vector v) {
  std::memcpy(p, &v, sizeof v);
}

// Every lane v.
template <class Vector>
inline Vector splat(double v) {
  Vector out;
  for (std::size_t k = 0; k < sizeof out / sizeof(double); ++k) out[k] = v;
  return out;
}

}  // namespace adgraph::lanes
