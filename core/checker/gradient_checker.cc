#include "core/checker/gradient_checker.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <utility>

#include "core/ad/gradients.h"
#include "core/ad/jvp.h"
#include "core/comm_context.h"
#include "core/error.h"

namespace adgraph {
namespace {

// Round-off multiple below which a Taylor remainder is noise.
constexpr double kNoiseFactor = 64.0 * std::numeric_limits<double>::epsilon();
// A remainder must exceed this many noise levels to enter a rate estimate.
constexpr double kSignalOverNoise = 100.0;

struct Reducer {
  CommContext* comm;
  double sum(double v) const { return comm ? comm->allreduce_sum(v) : v; }
  double max(double v) const { return comm ? comm->allreduce_max(v) : v; }
  int rank() const { return comm ? comm->rank() : 0; }
  int size() const { return comm ? comm->size() : 1; }
};

}  // namespace

const FieldTable<GradientCheckOptions>& GradientCheckOptions::fields() {
  using O = GradientCheckOptions;
  static const FieldTable<O> table = {
      field("step", &O::step, Range::above_to(0, 1), "central-difference step"),
      field("tolerance",
            &O::tolerance,
            Range::above(0),
            "largest |fd - g| / max(1, |g|) per entry"),
      field("directions",
            &O::directions,
            Range::at_least(0),
            "random Taylor directions"),
      field("taylor_epsilon",
            &O::taylor_epsilon,
            Range::above_to(0, 1),
            "first Taylor step; later ones are divided by 4"),
      field("taylor_steps",
            &O::taylor_steps,
            Range::closed(2, 20),
            "Taylor steps"),
      field("rate_tolerance",
            &O::rate_tolerance,
            Range::above_to(0, 1),
            "accepted deviation of the measured rate from 2"),
      field("seed", &O::seed, {}, "seed of the random directions"),
      field("finite_differences",
            &O::finite_differences,
            {},
            "compare with finite differences"),
      field("check_jvp", &O::check_jvp, {}, "check jvp() in every direction"),
      field("jvp_tolerance",
            &O::jvp_tolerance,
            Range::above(0),
            "largest |jvp d - grad J d| / max(1, |grad J d|)"),
  };
  return table;
}

bool GradientCheckOptions::is_valid(std::string* error) const {
  std::string why, name;
  if (check_fields(fields(), *this, &why, &name)) return true;
  *error = name + ": " + why;
  return false;
}

namespace {

// One check of y's gradient with respect to xs at `feeds`: central finite
// differences, then per random direction the jvp against the gradient and
// the Taylor remainders. Every rank runs it in lockstep; the first failure
// is kept as the message.
class GradientCheck {
 public:
  GradientCheck(Value y,
                const std::vector<Value>& xs,
                const FeedMap& feeds,
                const GradientCheckOptions& options)
      : y_(y),
        xs_(xs),
        feeds_(feeds),
        options_(options),
        reduce_{y.graph().comm()},
        grads_(gradients(y, xs)) {
    draw_directions();
    session_.emplace(y.graph());
    std::vector<Value> fetches = grads_;
    fetches.push_back(y);
    at_x_ = session_->run(fetches, feeds);
    j0_ = reduce_.sum(at_x_.back().item());
  }

  GradientCheckResult run() {
    if (options_.finite_differences) check_finite_differences();
    for (int dir = 0; dir < options_.directions; ++dir) check_direction(dir);
    result_.max_jvp_error = reduce_.max(result_.max_jvp_error);
    const double local_fail = failure_.str().empty() ? 0.0 : 1.0;
    result_.ok = reduce_.max(local_fail) == 0.0;
    result_.message = failure_.str();
    if (!result_.ok && result_.message.empty()) {
      result_.message = "failed on another rank";
    }
    return result_;
  }

 private:
  void draw_directions();
  void check_finite_differences();
  void check_direction(int dir);
  // The jvp's slope along direction `dir`, checked against the gradient's.
  double check_jvp(int dir, double slope);
  // The rate of r(ε) over the steps, nan when it stays at round-off, and
  // whether it is acceptable.
  std::pair<double, bool> taylor_rate(const std::vector<double>& remainder,
                                      const std::vector<double>& noise) const;

  double loss_at(const FeedMap& at) {
    return reduce_.sum(session_->run(y_, at).item());
  }

  const Value y_;
  const std::vector<Value>& xs_;
  const FeedMap& feeds_;
  const GradientCheckOptions& options_;
  const Reducer reduce_;
  const std::vector<Value> grads_;
  std::vector<std::vector<Tensor>> directions_;
  std::vector<Value> y_dots_;
  std::optional<Session> session_;
  std::vector<Tensor> at_x_;  // the gradients at x, then y
  double j0_ = 0;
  GradientCheckResult result_;
  std::ostringstream failure_;
};

// Taylor directions, drawn before the session runs; each direction's jvp
// is built with the direction as a constant, so the graph gains no
// placeholder that later runs would have to feed.
void GradientCheck::draw_directions() {
  Graph& g = y_.graph();
  std::mt19937_64 rng(options_.seed +
                      7919u * static_cast<unsigned>(reduce_.rank()));
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  directions_.resize(options_.directions);
  for (std::vector<Tensor>& d : directions_) {
    std::vector<Value> tangents;
    for (const Value& x : xs_) {
      Tensor t(x.shape());
      for (int64_t i = 0; i < t.size(); ++i) t[i] = uniform(rng);
      if (options_.check_jvp) tangents.push_back(g.constant(t));
      d.push_back(std::move(t));
    }
    if (options_.check_jvp) {
      y_dots_.push_back(jvp(std::vector<Value>{y_}, xs_, tangents)[0]);
    }
  }
}

// Each element of each x in turn (rank by rank), moved by ±step.
void GradientCheck::check_finite_differences() {
  FeedMap at = feeds_;
  for (std::size_t k = 0; k < xs_.size(); ++k) {
    const Tensor& g_k = at_x_[k];
    Tensor& x_k = at.at(xs_[k]);
    const int64_t n_max =
        static_cast<int64_t>(reduce_.max(static_cast<double>(x_k.size())));
    for (int owner = 0; owner < reduce_.size(); ++owner) {
      for (int64_t i = 0; i < n_max; ++i) {
        const bool mine = owner == reduce_.rank() && i < x_k.size();
        const double saved = mine ? x_k[i] : 0.0;
        if (mine) x_k[i] = saved + options_.step;
        const double up = loss_at(at);
        if (mine) x_k[i] = saved - options_.step;
        const double down = loss_at(at);
        if (!mine) continue;
        x_k[i] = saved;
        const double fd = (up - down) / (2 * options_.step);
        const double err =
            std::fabs(fd - g_k[i]) / std::max(1.0, std::fabs(g_k[i]));
        if (!(err <= result_.max_fd_error)) {
          result_.max_fd_error = std::isnan(err) ? INFINITY : err;
        }
        if (!(err <= options_.tolerance) && failure_.str().empty()) {
          failure_ << "d/d " << xs_[k].name() << "[" << i << "] on rank "
                   << owner << ": gradient " << g_k[i] << ", finite difference "
                   << fd << " (error " << err << ")";
        }
      }
    }
  }
  result_.max_fd_error = reduce_.max(result_.max_fd_error);
}

std::pair<double, bool> GradientCheck::taylor_rate(
    const std::vector<double>& remainder,
    const std::vector<double>& noise) const {
  double rate = std::numeric_limits<double>::quiet_NaN();
  for (int s = 0; s + 1 < options_.taylor_steps; ++s) {
    if (remainder[s + 1] > kSignalOverNoise * noise[s + 1]) {
      rate = std::log(remainder[s] / remainder[s + 1]) / std::log(4.0);
    }
  }
  const bool linear = remainder[0] <= kSignalOverNoise * noise[0];
  const bool ok = std::isnan(rate)
                      ? linear
                      : std::fabs(rate - 2.0) <= options_.rate_tolerance;
  return std::make_pair(rate, ok);
}

double GradientCheck::check_jvp(int dir, double slope) {
  const double jvp_slope =
      reduce_.sum(session_->run(y_dots_[dir], feeds_).item());
  const double err =
      std::fabs(jvp_slope - slope) / std::max(1.0, std::fabs(slope));
  if (!(err <= result_.max_jvp_error)) {
    result_.max_jvp_error = std::isnan(err) ? INFINITY : err;
  }
  if (!(err <= options_.jvp_tolerance) && failure_.str().empty()) {
    failure_ << "direction " << dir << ": jvp " << jvp_slope
             << ", gradient . direction " << slope << " (error " << err << ")";
  }
  return jvp_slope;
}

void GradientCheck::check_direction(int dir) {
  const std::vector<Tensor>& d = directions_[dir];
  double local_slope = 0.0;
  for (std::size_t k = 0; k < xs_.size(); ++k) {
    local_slope += (d[k].array() * at_x_[k].array()).sum();
  }
  const double slope = reduce_.sum(local_slope);
  const double jvp_slope = options_.check_jvp ? check_jvp(dir, slope) : slope;
  std::vector<double> remainder, jvp_remainder, noise;
  double eps = options_.taylor_epsilon;
  for (int s = 0; s < options_.taylor_steps; ++s, eps /= 4) {
    FeedMap at = feeds_;
    for (std::size_t k = 0; k < xs_.size(); ++k) {
      at.at(xs_[k]).array() += eps * d[k].array();
    }
    const double j = loss_at(at);
    remainder.push_back(std::fabs(j - j0_ - eps * slope));
    jvp_remainder.push_back(std::fabs(j - j0_ - eps * jvp_slope));
    noise.push_back(kNoiseFactor * (std::fabs(j) + std::fabs(j0_) +
                                    std::fabs(eps * slope)) +
                    std::numeric_limits<double>::min());
  }
  auto [rate, rate_ok] = taylor_rate(remainder, noise);
  result_.taylor_rates.push_back(rate);
  if (!rate_ok && failure_.str().empty()) {
    failure_ << "Taylor test direction " << dir << ": remainder rate " << rate
             << " (expected 2 ± " << options_.rate_tolerance << "); remainders";
    for (double r : remainder) failure_ << " " << r;
  }
  if (!options_.check_jvp) return;
  auto [jvp_rate, jvp_ok] = taylor_rate(jvp_remainder, noise);
  result_.jvp_taylor_rates.push_back(jvp_rate);
  if (!jvp_ok && failure_.str().empty()) {
    failure_ << "Taylor test of jvp, direction " << dir << ": remainder rate "
             << jvp_rate << " (expected 2 ± " << options_.rate_tolerance
             << "); remainders";
    for (double r : jvp_remainder) failure_ << " " << r;
  }
}

}  // namespace

GradientCheckResult check_gradients(Value y,
                                    const std::vector<Value>& xs,
                                    const FeedMap& feeds,
                                    const GradientCheckOptions& options) {
  std::string error;
  if (!options.is_valid(&error)) {
    throw OptionsError(error, {}, {}, "GradientCheckOptions");
  }
  if (!y.valid() || num_elements(y.shape()) != 1) {
    throw GraphError("the checked value must have one element", y.name());
  }
  for (const Value& x : xs) {
    if (!feeds.count(x)) {
      throw GraphError("the checked input must be a fed placeholder", x.name());
    }
  }
  return GradientCheck(y, xs, feeds, options).run();
}

}  // namespace adgraph
