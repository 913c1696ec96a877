// The generalized Cauchy point of L-BFGS-B (optim/lbfgsb_impl.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "optim/lbfgsb_impl.h"

namespace adgraph::optim::detail {
namespace {

// A breakpoint: where variable `index` of rank `rank` reaches its bound on
// the path x − t·g, with what the Cauchy search needs of it.
struct Breakpoint {
  double t;
  int64_t order;  // Box::order: first among ties
  int rank;
  int64_t index;
  double d;           // −g_i
  double z;           // bound − x_i
  Eigen::VectorXd w;  // row i of W

  auto key() const { return std::tie(t, order, rank, index); }
};

// The breakpoints of all ranks in one global order (t, order, rank,
// index). With
// sharded variables each rank sorts its own, and they are gathered in
// batches (doubling in size) only as far as the search goes: a gathered
// breakpoint is handed out once every rank with breakpoints still unsent
// has sent one at least as late.
class BreakpointStream {
 public:
  BreakpointStream(std::vector<Breakpoint> mine,
                   int total,
                   int width,
                   const Reducer& reduce)
      : mine_(std::move(mine)), width_(width), reduce_(reduce) {
    std::sort(mine_.begin(), mine_.end(), [](const auto& a, const auto& b) {
      return a.key() < b.key();
    });
    left_ = total;
    if (!reduce.sharded()) {
      pool_.assign(mine_.begin(), mine_.end());
      mine_.clear();
      return;
    }
    // Every rank's count, then nothing sent yet.
    const std::vector<double> counts =
        reduce.gather({static_cast<double>(mine_.size())});
    unsent_.assign(counts.begin(), counts.end());
    last_sent_.assign(counts.size(), Breakpoint{-1.0, 0, 0, 0, 0, 0, {}});
  }

  int left() const { return left_; }

  // The next breakpoint in the global order. Collective when sharded; call
  // only while left() > 0.
  Breakpoint next() {
    while (!ready()) fetch();
    std::pop_heap(pool_.begin(), pool_.end(), later);
    Breakpoint b = std::move(pool_.back());
    pool_.pop_back();
    --left_;
    return b;
  }

 private:
  static bool later(const Breakpoint& a, const Breakpoint& b) {
    return a.key() > b.key();
  }

  bool ready() {
    if (!heaped_) {
      std::make_heap(pool_.begin(), pool_.end(), later);
      heaped_ = true;
    }
    if (pool_.empty()) return false;
    const Breakpoint& first = pool_.front();
    for (std::size_t r = 0; r < unsent_.size(); ++r) {
      if (unsent_[r] > 0 && last_sent_[r].key() < first.key()) return false;
    }
    return true;
  }

  // One batch from every rank with breakpoints left: (t, order, index, d,
  // z, w); the order and index are integers below 2^53, exact as doubles.
  void fetch() {
    const int fields = 5 + width_;
    const int ranks = reduce_.size();
    std::vector<double> slot(1 + static_cast<std::size_t>(batch_) * fields,
                             0.0);
    const int count =
        static_cast<int>(std::min<std::size_t>(batch_, mine_.size() - sent_));
    slot[0] = count;
    for (int b = 0; b < count; ++b) {
      const Breakpoint& p = mine_[sent_ + b];
      double* f = &slot[1 + static_cast<std::size_t>(b) * fields];
      f[0] = p.t, f[1] = static_cast<double>(p.order);
      f[2] = static_cast<double>(p.index), f[3] = p.d, f[4] = p.z;
      for (int j = 0; j < width_; ++j) f[5 + j] = p.w[j];
    }
    sent_ += count;
    const std::vector<double> all = reduce_.gather(slot);
    for (int r = 0; r < ranks; ++r) {
      const double* base = &all[static_cast<std::size_t>(r) * slot.size()];
      const int n = static_cast<int>(base[0]);
      for (int b = 0; b < n; ++b) {
        const double* f = base + 1 + static_cast<std::size_t>(b) * fields;
        Breakpoint p{f[0],
                     static_cast<int64_t>(f[1]),
                     r,
                     static_cast<int64_t>(f[2]),
                     f[3],
                     f[4],
                     Eigen::Map<const Eigen::VectorXd>(f + 5, width_)};
        last_sent_[r] = p;
        pool_.push_back(std::move(p));
        std::push_heap(pool_.begin(), pool_.end(), later);
      }
      unsent_[r] -= n;
    }
    batch_ *= 2;
  }

  std::vector<Breakpoint> mine_;
  std::size_t sent_ = 0;
  int width_;
  const Reducer& reduce_;
  int left_ = 0;
  int batch_ = 32;
  std::vector<Breakpoint> pool_;  // a min-heap on the key
  bool heaped_ = false;
  std::vector<double> unsent_;
  std::vector<Breakpoint> last_sent_;
};

// Where each variable stands (at a bound with the gradient pushing it
// out, free, or with a zero gradient), the steepest-descent direction d
// (zero where a bound holds the variable), this rank's breakpoints, and
// counts[1..2]: the moving variables and the unbounded movers.
std::vector<Breakpoint> steepest_descent(const Eigen::VectorXd& x,
                                         const Eigen::VectorXd& g,
                                         const Box& box,
                                         std::vector<Where>& where,
                                         const CompactBfgs& bfgs,
                                         const Reducer& reduce,
                                         Eigen::VectorXd& d,
                                         double counts[4]) {
  std::vector<Breakpoint> mine;
  for (int64_t i = 0; i < x.size(); ++i) {
    if (where[i] != Where::kFixed && where[i] != Where::kUnbounded) {
      const bool at_lower = box.has_lower(i) && x[i] - box.lower[i] <= 0;
      const bool at_upper = box.has_upper(i) && box.upper[i] - x[i] <= 0;
      where[i] = Where::kFree;
      if (at_lower) {
        if (g[i] >= 0) where[i] = Where::kAtLower;
      } else if (at_upper) {
        if (g[i] <= 0) where[i] = Where::kAtUpper;
      } else if (g[i] == 0) {
        where[i] = Where::kZeroGradient;
      }
    }
    if (where[i] != Where::kFree && where[i] != Where::kUnbounded) continue;
    d[i] = -g[i];
    counts[1] += 1;
    if (d[i] < 0 && box.has_lower(i)) {
      mine.push_back({(x[i] - box.lower[i]) / g[i],
                      box.order(i),
                      reduce.rank(),
                      i,
                      d[i],
                      box.lower[i] - x[i],
                      bfgs.w_row(i)});
    } else if (d[i] > 0 && box.has_upper(i)) {
      mine.push_back({(box.upper[i] - x[i]) / d[i],
                      box.order(i),
                      reduce.rank(),
                      i,
                      d[i],
                      box.upper[i] - x[i],
                      bfgs.w_row(i)});
    } else if (d[i] != 0) {
      counts[2] += 1;
    }
  }
  return mine;
}

}  // namespace

CauchyPoint cauchy_point(const Eigen::VectorXd& x,
                         const Eigen::VectorXd& g,
                         const Box& box,
                         std::vector<Where>& where,
                         const CompactBfgs& bfgs,
                         const Reducer& reduce) {
  const int64_t n = x.size();
  const int k = bfgs.k();
  const double theta = bfgs.theta();
  CauchyPoint out;
  out.x = x;
  out.c = Eigen::VectorXd::Zero(2 * k);

  // The steepest-descent direction d (zero where a bound holds the
  // variable), its breakpoints, and p = Wᵀd.
  Eigen::VectorXd d = Eigen::VectorXd::Zero(n);
  // Counts: breakpoints, moving variables, unbounded movers, variables.
  double counts[4] = {0, 0, 0, static_cast<double>(n)};
  std::vector<Breakpoint> mine =
      steepest_descent(x, g, box, where, bfgs, reduce, d, counts);
  counts[0] = static_cast<double>(mine.size());
  Eigen::VectorXd p = bfgs.w_transpose(d, reduce);
  reduce.sum_over_variables(counts, 4);  // integers: exact in any order
  // f' = −dᵀd, an exact sum.
  double f1 = -reduce.dot(d, d);
  const int breakpoints = static_cast<int>(counts[0]);
  const bool bounded = counts[2] == 0;  // every mover meets a bound
  const double n_total = counts[3];
  if (counts[1] == 0) return out;  // no variable moves: x is the point

  // f'' = −θ·f' − pᵀMp along the first segment; the model's minimiser on
  // a segment is Δt = −f'/f''.
  double f2 =
      -theta * f1 - (k > 0 ? dot_in_order(p, bfgs.apply_middle(p)) : 0.0);
  const double f2_original = f2;
  double dt_min = -f1 / f2;
  double t_sum = 0, t_previous = 0;
  out.segments = 1;
  BreakpointStream stream(std::move(mine), breakpoints, 2 * k, reduce);
  bool all_fixed = false;
  while (stream.left() > 0) {
    Breakpoint b = stream.next();
    const double dt = b.t - t_previous;
    if (dt_min < dt) break;  // the minimiser lies in this segment
    // Variable b reaches its bound; the path bends there.
    t_sum += dt;
    if (b.rank == reduce.rank() || !reduce.sharded()) {
      out.x[b.index] = b.d > 0 ? box.upper[b.index] : box.lower[b.index];
      where[b.index] = b.d > 0 ? Where::kAtUpper : Where::kAtLower;
      d[b.index] = 0;
    }
    if (stream.left() == 0 && breakpoints == n_total) {
      dt_min = dt;  // every variable is at a bound
      all_fixed = true;
      break;
    }
    ++out.segments;
    const double d2 = b.d * b.d;
    f1 = f1 + dt * f2 + d2 - theta * b.d * b.z;
    f2 = f2 - theta * d2;
    if (k > 0) {
      out.c += dt * p;
      const Eigen::VectorXd v = bfgs.apply_middle(b.w);
      const double wmc = dot_in_order(out.c, v), wmp = dot_in_order(p, v),
                   wmw = dot_in_order(b.w, v);
      p -= b.d * b.w;
      f1 += b.d * wmc;
      f2 += 2.0 * b.d * wmp - d2 * wmw;
    }
    f2 = std::max(std::numeric_limits<double>::epsilon() * f2_original, f2);
    t_previous = b.t;
    // Past the last breakpoint of a path on which every mover meets a
    // bound, nothing moves further.
    dt_min = stream.left() == 0 && bounded ? 0 : -f1 / f2;
  }
  if (!all_fixed) {
    dt_min = std::max(dt_min, 0.0);
    t_sum += dt_min;
    out.x += t_sum * d;
  }
  if (k > 0) out.c += dt_min * p;
  out.ok = out.c.allFinite() && std::isfinite(t_sum);
  return out;
}

}  // namespace adgraph::optim::detail
