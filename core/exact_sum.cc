#include "core/exact_sum.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

#include "core/comm_context.h"
#include "core/lanes.h"

namespace adgraph {
namespace {

// Bit 0 of word 0 has the weight 2^kLowest, the smallest subnormal.
constexpr int kLowest = -1074;
constexpr int64_t kDigit = int64_t{1} << 32;
constexpr int64_t kNormalizeEvery = int64_t{1} << 30;
using Wide = unsigned __int128;
constexpr uint64_t kFractionBits = (uint64_t{1} << 52) - 1;
enum Special { kNan = ExactSum::kDigitWords, kPlusInf, kMinusInf };

}  // namespace

void ExactSum::add(double x) {
  // x = m·2^(kLowest + offset) with m its 53-bit significand (52 bits and
  // offset 0 for a subnormal), read from its bits: frexp and ldexp made
  // this 5× slower (22 ns an element, bench/exact_sum_bench).
  const auto bits = std::bit_cast<uint64_t>(x);
  const int biased = static_cast<int>((bits >> 52) & 0x7ff);
  if (biased == 0x7ff) {
    const bool nan = (bits & kFractionBits) != 0;
    ++words_[nan ? kNan : (bits >> 63) == 0 ? kPlusInf : kMinusInf];
    return;
  }
  const bool normal = biased != 0;
  const uint64_t m = (bits & kFractionBits) | (uint64_t{normal} << 52);
  const int offset = biased - int{normal};
  const auto v = static_cast<int64_t>(m);
  add_shifted((bits >> 63) != 0 ? -v : v, offset);
}

void ExactSum::add_shifted(int64_t v, int offset) {
  // v·2^(kLowest + offset), |v| < 2^63: 94 bits over three words, each
  // digit added as d or −d by a two's-complement mask ((d ^ s) − s).
  const int64_t s = v < 0 ? -1 : 0;
  const uint64_t magnitude = v < 0 ? 0 - static_cast<uint64_t>(v) : v;
  const Wide shifted = static_cast<Wide>(magnitude) << (offset % 32);
  int64_t* w = words_.data() + offset / 32;
  for (int k = 0; k < 3; ++k) {
    const auto digit = static_cast<int64_t>(
        static_cast<uint64_t>(shifted >> (32 * k)) & 0xffffffffu);
    w[k] += (digit ^ s) - s;
  }
  if (++pending_ >= kNormalizeEvery) normalize();
}

namespace {

// What the extraction below leaves (or cannot take) goes through one bin
// per binary exponent: a bin adds the signed 53-bit significands of its
// exponent as integers (exact while at most 2^10 of them are in it), and
// every kBinBlock values the touched bins go into the words, one
// add_shifted each. An element then costs an integer add instead of three
// word adds (bench/exact_sum_bench: 5.4 -> 2.3 ns an element alone); the
// sum is the same exact number either way.
constexpr int64_t kBinnedFrom = 64;
constexpr int64_t kBinBlock = 2048;  // 1024 values a set of bins

template <class Value>
void add_binned(ExactSum& sum, int64_t n, Value value) {
  // kWays interleaved sets of bins, so that consecutive values of one
  // exponent (the common case) do not wait on each other's add. They are
  // zero between calls (every flush clears what it read), so a call does
  // not clear 32 KB first.
  constexpr int kWays = 2;
  thread_local std::array<std::array<int64_t, 2048>, kWays> zeroed{};
  auto& bins = zeroed;
  for (int64_t first = 0; first < n; first += kBinBlock) {
    const int64_t last = std::min(n, first + kBinBlock);
    int lowest = 2047, highest = 0;
    bool special = false;
    auto put = [&](std::array<int64_t, 2048>& ways, double x) {
      const auto bits = std::bit_cast<uint64_t>(x);
      const int biased = static_cast<int>((bits >> 52) & 0x7ff);
      special |= biased == 0x7ff;
      const int normal = biased != 0;
      const auto m = static_cast<int64_t>((bits & kFractionBits) |
                                          (uint64_t(normal) << 52));
      const int offset = biased - normal;
      const int64_t s = -static_cast<int64_t>(bits >> 63);
      ways[offset] += (m ^ s) - s;
      lowest = std::min(lowest, offset);
      highest = std::max(highest, offset);
    };
    int64_t i = first;
    for (; i + kWays <= last; i += kWays) {
      for (int w = 0; w < kWays; ++w) put(bins[w], value(i + w));
    }
    for (; i < last; ++i) put(bins[0], value(i));
    // NaN and infinities are counted too; their bits landed in bin 2046
    // (biased exponent 0x7ff), which cannot matter: a count of them
    // decides the rounded sum before the words do.
    if (special) {
      for (int64_t k = first; k < last; ++k) {
        if (const double x = value(k); !std::isfinite(x)) sum.add(x);
      }
    }
    for (auto& ways : bins) {
      for (int o = lowest; o <= highest; ++o) {
        if (ways[o] != 0) sum.add_shifted(ways[o], o);
        ways[o] = 0;
      }
    }
  }
}

}  // namespace

namespace {

// Blocks of kBlock values are first split by extraction (S. M. Rump,
// T. Ogita, S. Oishi, "Accurate floating-point summation part I", SIAM J.
// Sci. Comput. 31, 2008, Lemma 3.3): with σ = 2^k >= 2^kBlockBits·max|x|,
// q = (σ + x) − σ and r = x − q are exact, every q is a multiple of
// 2^(k−53) and the sum of a block's q (at most kBlock of them, each below
// σ/2^kBlockBits + 2^(k−53)) stays below σ, so it is exact in any order:
// plain double adds in vector lanes. Each pass takes 53 − kBlockBits bits
// of every value; the residuals go through the next pass with σ scaled
// down by 2^(kBlockBits−53). What is left after kPasses (values far below
// the block's largest) goes to the bins, and so does a block with NaN,
// infinities, values near overflow or a σ near the subnormals. Every part
// is exact, so the accumulator holds the same number as element by
// element: about 0.6 ns an element instead of 2.2 (bench/exact_sum_bench).
constexpr int64_t kBlock = 2048;
constexpr int kBlockBits = 12;  // 2^12 >= kBlock + 2
constexpr int kPasses = 3;
// As many lanes as the target's vectors hold, up to 4 (the sums are exact,
// so the width does not change them).
constexpr int kWidth = std::min(lanes::kWidest, 4);
using Lanes = double __attribute__((vector_size(kWidth * sizeof(double))));
using LaneBits = long long __attribute__((vector_size(kWidth * 8)));

constexpr auto load_lanes = lanes::load<Lanes>;
constexpr auto store_lanes = lanes::store<Lanes>;
constexpr auto splat = lanes::splat<Lanes>;

// Adds r[0..count) (count a multiple of kWidth; r is overwritten) to sum.
void add_block(ExactSum& sum, double* r, int64_t count) {
  Lanes top = splat(0.0);
  LaneBits odd = {};  // NaN seen
  LaneBits magnitude;
  for (int k = 0; k < kWidth; ++k) magnitude[k] = INT64_MAX;
  for (int64_t i = 0; i < count; i += kWidth) {
    const Lanes x = load_lanes(r + i);
    const auto a =
        reinterpret_cast<Lanes>(reinterpret_cast<LaneBits>(x) & magnitude);
    top = a > top ? a : top;
    odd |= x != x;
  }
  double largest = 0;
  bool nan = false;
  for (int k = 0; k < kWidth; ++k) {
    largest = std::max(largest, top[k]);
    nan = nan || odd[k] != 0;
  }
  if (largest == 0 && !nan) return;
  int e = 0;
  if (!nan && std::isfinite(largest)) std::frexp(largest, &e);  // < 2^e
  constexpr int kLowestSigma = -900;  // far above the subnormals
  bool left = true;
  if (!nan && std::isfinite(largest) && e + kBlockBits <= 1023 &&
      e + kBlockBits - 53 * kPasses >= kLowestSigma) {
    double sigma = std::ldexp(1.0, e + kBlockBits);
    for (int pass = 0; pass < kPasses && left; ++pass) {
      const Lanes s = splat(sigma);
      Lanes total = splat(0.0);
      LaneBits rest = {};
      for (int64_t i = 0; i < count; i += kWidth) {
        const Lanes x = load_lanes(r + i);
        const Lanes q = (s + x) - s;
        const Lanes residual = x - q;
        store_lanes(r + i, residual);
        total += q;
        rest |= residual != 0;
      }
      double block_total = 0;
      left = false;
      for (int k = 0; k < kWidth; ++k) {
        block_total += total[k];
        left = left || rest[k] != 0;
      }
      sum.add(block_total);
      sigma = std::ldexp(sigma, kBlockBits - 53);
    }
  }
  if (left) add_binned(sum, count, [r](int64_t i) { return r[i]; });
}

template <class Value>
void add_extracted(ExactSum& sum, int64_t n, Value value) {
  alignas(64) double r[kBlock];
  for (int64_t first = 0; first < n; first += kBlock) {
    const int64_t count = std::min(kBlock, n - first);
    for (int64_t i = 0; i < count; ++i) r[i] = value(first + i);
    const int64_t padded = (count + kWidth - 1) / kWidth * kWidth;
    std::fill(r + count, r + padded, 0.0);
    add_block(sum, r, padded);
  }
}

}  // namespace

void ExactSum::add(const double* x, int64_t n) {
  if (n < kBinnedFrom) {
    for (int64_t i = 0; i < n; ++i) add(x[i]);
    return;
  }
  add_extracted(*this, n, [x](int64_t i) { return x[i]; });
}

void ExactSum::add_products(const double* a, const double* b, int64_t n) {
  if (n < kBinnedFrom) {
    for (int64_t i = 0; i < n; ++i) add(a[i] * b[i]);
    return;
  }
  add_extracted(*this, n, [a, b](int64_t i) { return a[i] * b[i]; });
}

void ExactSum::normalize() {
  for (int k = 0; k + 1 < kDigitWords; ++k) {
    // Floor division by 2^32 (arithmetic shift), so the digit stays >= 0.
    const int64_t carry = words_[k] >> 32;
    words_[k] -= carry * kDigit;
    words_[k + 1] += carry;
  }
  pending_ = 0;
}

void ExactSum::merge(const ExactSum& other) {
  ExactSum copy = other;
  copy.normalize();
  normalize();
  for (int k = 0; k < kWords; ++k) words_[k] += copy.words_[k];
  normalize();
}

double ExactSum::round() const {
  const bool nan =
      words_[kNan] > 0 || (words_[kPlusInf] > 0 && words_[kMinusInf] > 0);
  if (nan) return std::numeric_limits<double>::quiet_NaN();
  if (words_[kPlusInf] > 0) return std::numeric_limits<double>::infinity();
  if (words_[kMinusInf] > 0) return -std::numeric_limits<double>::infinity();
  ExactSum s = *this;
  s.normalize();
  auto& w = s.words_;
  const bool negative = w[kDigitWords - 1] < 0;
  if (negative) {
    for (int k = 0; k < kDigitWords; ++k) w[k] = -w[k];
    s.normalize();
  }
  int top = kDigitWords - 1;
  while (top >= 0 && w[top] == 0) --top;
  if (top < 0) return 0.0;
  // The three highest words hold at least 65 significant bits; what lies
  // below them only decides ties (the sticky bit).
  auto at = [&](int k) -> Wide { return k < 0 ? 0 : static_cast<Wide>(w[k]); };
  const Wide high = (at(top) << 64) | (at(top - 1) << 32) | at(top - 2);
  bool sticky = false;
  for (int k = 0; k < top - 2; ++k) sticky |= w[k] != 0;
  int bits = 0;
  while (bits < 128 && (high >> bits) != 0) ++bits;
  int exponent = 32 * (top - 2) + kLowest;
  double magnitude = 0;
  if (bits <= 53) {
    magnitude =
        std::ldexp(static_cast<double>(static_cast<uint64_t>(high)), exponent);
  } else {
    const int drop = bits - 53;
    auto kept = static_cast<uint64_t>(high >> drop);
    const Wide rest = high & ((Wide{1} << drop) - 1);
    const Wide half = Wide{1} << (drop - 1);
    if (rest > half || (rest == half && (sticky || (kept & 1) != 0))) ++kept;
    magnitude = std::ldexp(static_cast<double>(kept), exponent + drop);
  }
  return negative ? -magnitude : magnitude;
}

namespace {

// The exact sum of the values added so far as non-overlapping partials,
// increasing in magnitude, by error-free additions (J. R. Shewchuk,
// "Adaptive precision floating-point arithmetic", DCG 18, 1997; the
// algorithm of Python's math.fsum).
class Partials {
 public:
  static constexpr int kMost = 64;

  // False on an intermediate overflow or when kMost partials do not hold
  // the sum (the partials are then not the sum).
  bool add(double v) {
    int kept = 0;
    for (int j = 0; j < m_; ++j) {
      double y = p_[j];
      if (std::fabs(v) < std::fabs(y)) std::swap(v, y);
      const double high = v + y;
      const double low = y - (high - v);  // exact: |v| >= |y| (Fast2Sum)
      if (low != 0) p_[kept++] = low;
      v = high;
    }
    if (!std::isfinite(v) || kept == kMost) return false;
    p_[kept++] = v;
    m_ = kept;
    return true;
  }
  int size() const { return m_; }
  double operator[](int j) const { return p_[j]; }

  // Fewer partials of the same sum (Shewchuk's Compress): a sweep down
  // joins what fits into one double, a sweep up joins again; the result
  // has no two adjacent partials, so about one a 53 bits of the sum.
  void compress() {
    if (m_ < 2) return;
    double g[kMost];
    int bottom = m_ - 1;
    double q = p_[m_ - 1];
    for (int i = m_ - 2; i >= 0; --i) {
      const double high = q + p_[i];
      const double low = p_[i] - (high - q);
      if (low != 0) {
        g[bottom--] = high;
        q = low;
      } else {
        q = high;
      }
    }
    g[bottom] = q;
    int top = 0;
    for (int i = bottom + 1; i < m_; ++i) {
      const double high = g[i] + q;
      const double low = q - (high - g[i]);
      if (low != 0) p_[top++] = low;
      q = high;
    }
    p_[top++] = q;
    m_ = top;
  }

  // The sum rounded once: add from the top until a rounding error shows;
  // then the next partial below decides a tie (round half away only where
  // the rest says so).
  double round() const {
    if (m_ == 0) return 0.0;
    int j = m_ - 1;
    double high = p_[j], low = 0;
    while (j > 0) {
      const double v = high, y = p_[--j];
      high = v + y;
      low = y - (high - v);
      if (low != 0) break;
    }
    if (j > 0 && ((low < 0 && p_[j - 1] < 0) || (low > 0 && p_[j - 1] > 0))) {
      const double twice = low * 2, moved = high + twice;
      if (twice == moved - high) high = moved;
    }
    return high == 0 ? 0.0 : high;  // +0, as ExactSum gives any zero sum
  }

 private:
  double p_[kMost];
  int m_ = 0;
};

// 2^e for kLowest <= e <= 1023, from its bits.
double power_of_two(int e) {
  return std::bit_cast<double>(e >= -1022
                                   ? static_cast<uint64_t>(e + 1023) << 52
                                   : uint64_t{1} << (e - kLowest));
}

}  // namespace

bool ExactSum::expand(double* terms, int count) const {
  std::fill(terms, terms + count, 0.0);
  if (words_[kNan] > 0 || words_[kPlusInf] > 0 || words_[kMinusInf] > 0) {
    if (count > 0) terms[0] = round();
    return count > 0;
  }
  // Each word's high and low 32 bits, scaled, are exact doubles; their
  // partials are the terms. No carries over the 68 words (normalize and
  // negating a negative sum took 110 ns; bench/exact_sum_bench).
  Partials partials;
  for (int k = 0; k < kDigitWords; ++k) {
    const int64_t w = words_[k];
    if (w == 0) continue;
    const double low = static_cast<double>(w & (kDigit - 1));
    const double high = static_cast<double>(w >> 32);
    const int e = 32 * k + kLowest;  // past 1023: no finite sum of doubles
    if (low != 0 && (e > 1023 || !partials.add(low * power_of_two(e))))
      return false;
    if (high != 0 &&
        (e + 32 > 1023 || !partials.add(high * power_of_two(e + 32))))
      return false;
  }
  partials.compress();
  if (partials.size() > count) return false;
  for (int t = 0; t < partials.size(); ++t)
    terms[t] = partials[partials.size() - 1 - t];
  return true;
}

double exact_sum(const double* x, int64_t n) {
  ExactSum s;
  s.add(x, n);
  return s.round();
}

double exact_sum_of_few(const double* x, int n) {
  if (n > Partials::kMost) return exact_sum(x, n);
  Partials partials;
  for (int k = 0; k < n; ++k)
    if (!std::isfinite(x[k]) || !partials.add(x[k])) return exact_sum(x, n);
  const double rounded = partials.round();
  // ±Inf as ExactSum has it (a rounding past the largest double).
  return std::isfinite(rounded) ? rounded : exact_sum(x, n);
}

// Normalized words are integers below 2^33 in magnitude (the digits, the
// small top word, the counts), so a double MPI_SUM of them over fewer than
// 2^20 ranks is exact in any order. Vectors go in chunks of kExactChunk
// elements (2.3 MB of words), so the words of a large vector are never all
// in memory at once.
//
// With at most kGatherRanks ranks, one value per rank and element goes
// instead: every rank's values side by side in zero-padded slots (an
// MPI_SUM with one nonzero term per slot, so exact: x + 0 is x, and -0
// becomes +0, which the exact sum makes of it anyway), then each rank sums
// each element's P values exactly itself. P doubles an element instead of
// ExactSum::kWords, and no normalizing of 71 words before the message:
// a third of the time for one double on 2 ranks (bench/exact_sum_bench).
constexpr int64_t kExactChunk = 4096;
constexpr int kGatherRanks = 16;

void CommContext::allreduce_exact(const double* in, double* out, int64_t n) {
  const int ranks = size();
  if (ranks > kGatherRanks) {
    std::vector<ExactSum> chunk(
        static_cast<std::size_t>(std::min(n, kExactChunk)));
    for (int64_t first = 0; first < n; first += kExactChunk) {
      const int count = static_cast<int>(std::min(kExactChunk, n - first));
      for (int i = 0; i < count; ++i) {
        chunk[i] = ExactSum();
        chunk[i].add(in[first + i]);
      }
      allreduce_exact_sums(chunk.data(), out + first, count);
    }
    return;
  }
  const int me = rank();
  std::vector<double> slots;
  for (int64_t first = 0; first < n; first += kExactChunk) {
    const int64_t count = std::min(kExactChunk, n - first);
    slots.assign(static_cast<std::size_t>(count * ranks), 0.0);
    std::copy(in + first, in + first + count, slots.begin() + me * count);
    allreduce(slots.data(), slots.data(), count * ranks, ReduceOp::kSum);
    double terms[kGatherRanks];
    for (int64_t i = 0; i < count; ++i) {
      for (int r = 0; r < ranks; ++r) terms[r] = slots[r * count + i];
      out[first + i] = exact_sum_of_few(terms, ranks);
    }
  }
}

double CommContext::allreduce_exact_sum(const double* in, int64_t n) {
  // (n may differ between ranks, so it cannot choose the gathering form.)
  ExactSum s;
  s.add(in, n);
  double out = 0;
  allreduce_exact_sums(&s, &out, 1);
  return out;
}

// Up to kGatherRanks ranks, each rank's exact sums go in slots too: a
// sum as kTerms doubles whose exact sum it is (ExactSum::expand), one more
// slot counting the sums that need more; each rank then sums every rank's
// terms exactly. Only when that count is not zero do the words go as well.
// Sums of similar magnitudes need two terms, of magnitudes 2^±40 three:
// kTerms·P doubles and no carries over 71 words (bench/exact_sum_bench).
constexpr int kTerms = 4;
static_assert(kGatherRanks * kTerms <= 64, "exact_sum_of_few takes 64 terms");

void CommContext::allreduce_exact_sums(const ExactSum* sums,
                                       double* out,
                                       int n) {
  const int ranks = size();
  if (ranks <= kGatherRanks) {
    const int64_t width = int64_t{ranks} * kTerms;
    // One sum's slots on the stack (a scalar's heap allocation showed).
    std::array<double, kGatherRanks * kTerms + 1> one{};
    std::vector<double> many;
    if (n > 1) many.assign(static_cast<std::size_t>(n * width + 1), 0.0);
    const std::span<double> slots =
        n > 1 ? std::span<double>(many)
              : std::span<double>(one.data(), width + 1);
    double& needing_more = slots.back();
    for (int i = 0; i < n; ++i) {
      double* mine = slots.data() + i * width + rank() * kTerms;
      if (!sums[i].expand(mine, kTerms)) needing_more += 1;
    }
    allreduce(slots.data(), slots.data(), n * width + 1, ReduceOp::kSum);
    if (needing_more == 0) {
      double terms[kGatherRanks * kTerms];
      for (int i = 0; i < n; ++i) {
        int m = 0;
        for (int64_t j = i * width; j < (i + 1) * width; ++j)
          if (slots[j] != 0) terms[m++] = slots[j];
        out[i] = exact_sum_of_few(terms, m);
      }
      return;
    }
  }
  allreduce_exact_words(sums, out, n);
}

void CommContext::allreduce_exact_words(const ExactSum* sums,
                                        double* out,
                                        int n) {
  constexpr int kW = ExactSum::kWords;
  std::vector<double> words(static_cast<std::size_t>(n) * kW);
  for (int i = 0; i < n; ++i) {
    ExactSum s = sums[i];
    s.normalize();
    for (int k = 0; k < kW; ++k)
      words[i * kW + k] = static_cast<double>(s.words()[k]);
  }
  allreduce(words.data(), words.data(), n * kW, ReduceOp::kSum);
  for (int i = 0; i < n; ++i) {
    ExactSum total;
    for (int k = 0; k < kW; ++k)
      total.words()[k] = static_cast<int64_t>(words[i * kW + k]);
    out[i] = total.round();
  }
}

}  // namespace adgraph
