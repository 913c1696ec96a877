#include "core/checker/gradient_checker.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <sstream>
#include <utility>

#include "core/comm_context.h"
#include "core/error.h"
#include "core/ad/gradients.h"
#include "core/ad/jvp.h"

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

bool GradientCheckOptions::is_valid(std::string* error) const {
  auto bad = [&](const std::string& msg) {
    *error = msg;
    return false;
  };
  if (!(step > 0 && step <= 1)) return bad("step must be in (0, 1]");
  if (!(tolerance > 0)) return bad("tolerance must be > 0");
  if (directions < 0) return bad("directions must be >= 0");
  if (!(taylor_epsilon > 0 && taylor_epsilon <= 1)) {
    return bad("taylor_epsilon must be in (0, 1]");
  }
  if (taylor_steps < 2 || taylor_steps > 20) {
    return bad("taylor_steps must be in [2, 20]");
  }
  if (!(rate_tolerance > 0 && rate_tolerance <= 1)) {
    return bad("rate_tolerance must be in (0, 1]");
  }
  if (!(jvp_tolerance > 0)) return bad("jvp_tolerance must be > 0");
  return true;
}

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
  Graph& g = y.graph();
  const std::vector<Value> grads = gradients(y, xs);
  const Reducer reduce{g.comm()};
  // Taylor directions, drawn before the session runs; each direction's jvp
  // is built with the direction as a constant, so the graph gains no
  // placeholder that later runs would have to feed.
  std::mt19937_64 rng(options.seed +
                      7919u * static_cast<unsigned>(reduce.rank()));
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<std::vector<Tensor>> directions(options.directions);
  std::vector<Value> y_dots;
  for (std::vector<Tensor>& d : directions) {
    std::vector<Value> tangents;
    for (const Value& x : xs) {
      Tensor t(x.shape());
      for (int64_t i = 0; i < t.size(); ++i) t[i] = uniform(rng);
      if (options.check_jvp) tangents.push_back(g.constant(t));
      d.push_back(std::move(t));
    }
    if (options.check_jvp) {
      y_dots.push_back(jvp(std::vector<Value>{y}, xs, tangents)[0]);
    }
  }
  Session session(g);
  GradientCheckResult result;
  std::ostringstream failure;

  auto loss_at = [&](const FeedMap& at) {
    return reduce.sum(session.run(y, at).item());
  };
  std::vector<Value> fetches = grads;
  fetches.push_back(y);
  std::vector<Tensor> at_x = session.run(fetches, feeds);
  const double j0 = reduce.sum(at_x.back().item());

  if (options.finite_differences) {
    FeedMap at = feeds;
    for (std::size_t k = 0; k < xs.size(); ++k) {
      const Tensor& g_k = at_x[k];
      Tensor& x_k = at.at(xs[k]);
      const int64_t n_max =
          static_cast<int64_t>(reduce.max(static_cast<double>(x_k.size())));
      for (int owner = 0; owner < reduce.size(); ++owner) {
        for (int64_t i = 0; i < n_max; ++i) {
          const bool mine = owner == reduce.rank() && i < x_k.size();
          const double saved = mine ? x_k[i] : 0.0;
          if (mine) x_k[i] = saved + options.step;
          const double up = loss_at(at);
          if (mine) x_k[i] = saved - options.step;
          const double down = loss_at(at);
          if (!mine) continue;
          x_k[i] = saved;
          const double fd = (up - down) / (2 * options.step);
          const double err =
              std::fabs(fd - g_k[i]) / std::max(1.0, std::fabs(g_k[i]));
          if (!(err <= result.max_fd_error)) {
            result.max_fd_error = std::isnan(err) ? INFINITY : err;
          }
          if (!(err <= options.tolerance) && failure.str().empty()) {
            failure << "d/d " << xs[k].name() << "[" << i << "] on rank "
                    << owner << ": gradient " << g_k[i]
                    << ", finite difference " << fd << " (error " << err << ")";
          }
        }
      }
    }
    result.max_fd_error = reduce.max(result.max_fd_error);
  }

  // The rate of r(ε) over the steps, nan when it stays at round-off.
  auto taylor_rate = [&](const std::vector<double>& remainder,
                         const std::vector<double>& noise) {
    double rate = std::numeric_limits<double>::quiet_NaN();
    for (int s = 0; s + 1 < options.taylor_steps; ++s) {
      if (remainder[s + 1] > kSignalOverNoise * noise[s + 1]) {
        rate = std::log(remainder[s] / remainder[s + 1]) / std::log(4.0);
      }
    }
    const bool linear = remainder[0] <= kSignalOverNoise * noise[0];
    const bool ok = std::isnan(rate)
                        ? linear
                        : std::fabs(rate - 2.0) <= options.rate_tolerance;
    return std::make_pair(rate, ok);
  };

  for (int dir = 0; dir < options.directions; ++dir) {
    const std::vector<Tensor>& d = directions[dir];
    double local_slope = 0.0;
    for (std::size_t k = 0; k < xs.size(); ++k) {
      local_slope += (d[k].array() * at_x[k].array()).sum();
    }
    const double slope = reduce.sum(local_slope);
    double jvp_slope = slope;
    if (options.check_jvp) {
      jvp_slope = reduce.sum(session.run(y_dots[dir], feeds).item());
      const double err =
          std::fabs(jvp_slope - slope) / std::max(1.0, std::fabs(slope));
      if (!(err <= result.max_jvp_error)) {
        result.max_jvp_error = std::isnan(err) ? INFINITY : err;
      }
      if (!(err <= options.jvp_tolerance) && failure.str().empty()) {
        failure << "direction " << dir << ": jvp " << jvp_slope
                << ", gradient . direction " << slope << " (error " << err
                << ")";
      }
    }
    std::vector<double> remainder, jvp_remainder, noise;
    double eps = options.taylor_epsilon;
    for (int s = 0; s < options.taylor_steps; ++s, eps /= 4) {
      FeedMap at = feeds;
      for (std::size_t k = 0; k < xs.size(); ++k) {
        at.at(xs[k]).array() += eps * d[k].array();
      }
      const double j = loss_at(at);
      remainder.push_back(std::fabs(j - j0 - eps * slope));
      jvp_remainder.push_back(std::fabs(j - j0 - eps * jvp_slope));
      noise.push_back(kNoiseFactor * (std::fabs(j) + std::fabs(j0) +
                                      std::fabs(eps * slope)) +
                      std::numeric_limits<double>::min());
    }
    auto [rate, rate_ok] = taylor_rate(remainder, noise);
    result.taylor_rates.push_back(rate);
    if (!rate_ok && failure.str().empty()) {
      failure << "Taylor test direction " << dir << ": remainder rate " << rate
              << " (expected 2 ± " << options.rate_tolerance << "); remainders";
      for (double r : remainder) failure << " " << r;
    }
    if (options.check_jvp) {
      auto [jvp_rate, jvp_ok] = taylor_rate(jvp_remainder, noise);
      result.jvp_taylor_rates.push_back(jvp_rate);
      if (!jvp_ok && failure.str().empty()) {
        failure << "Taylor test of jvp, direction " << dir
                << ": remainder rate " << jvp_rate << " (expected 2 ± "
                << options.rate_tolerance << "); remainders";
        for (double r : jvp_remainder) failure << " " << r;
      }
    }
  }
  result.max_jvp_error = reduce.max(result.max_jvp_error);

  const double local_fail = failure.str().empty() ? 0.0 : 1.0;
  result.ok = reduce.max(local_fail) == 0.0;
  result.message = failure.str();
  if (!result.ok && result.message.empty()) {
    result.message = "failed on another rank";
  }
  return result;
}

}  // namespace adgraph
