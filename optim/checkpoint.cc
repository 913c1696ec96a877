#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/error.h"
#include "optim/checkpoint_impl.h"

namespace adgraph::optim::detail {
namespace {

constexpr char kMagic[16] = "ADGRAPH-LBFGS-3";

class Writer {
 public:
  template <class T>
  void put(const T& v) {
    bytes_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void put(const Eigen::VectorXd& v) {
    bytes_.append(reinterpret_cast<const char*>(v.data()),
                  sizeof(double) * v.size());
  }
  void put(const Eigen::MatrixXd& m) {
    bytes_.append(reinterpret_cast<const char*>(m.data()),
                  sizeof(double) * m.size());
  }
  void put(const std::string& text) {
    put(static_cast<int64_t>(text.size()));
    bytes_.append(text);
  }
  std::string& bytes() { return bytes_; }

 private:
  std::string bytes_;
};

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  template <class T>
  bool get(T* v) {
    if (pos_ + sizeof(T) > bytes_.size()) return false;
    std::memcpy(v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool get(Eigen::VectorXd* v, int64_t n) {
    const std::size_t want = sizeof(double) * static_cast<std::size_t>(n);
    if (n < 0 || pos_ + want > bytes_.size()) return false;
    v->resize(n);
    std::memcpy(v->data(), bytes_.data() + pos_, want);
    pos_ += want;
    return true;
  }
  bool get(Eigen::MatrixXd* m, int64_t rows) {
    const std::size_t want =
        sizeof(double) * static_cast<std::size_t>(rows * rows);
    if (rows < 0 || pos_ + want > bytes_.size()) return false;
    m->resize(rows, rows);
    std::memcpy(m->data(), bytes_.data() + pos_, want);
    pos_ += want;
    return true;
  }
  bool get(std::string* text) {
    int64_t n = 0;
    if (!get(&n) || n < 0 || pos_ + static_cast<std::size_t>(n) > bytes_.size())
      return false;
    text->assign(bytes_, pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return true;
  }
  std::size_t position() const { return pos_; }

 private:
  const std::string& bytes_;
  std::size_t pos_ = 0;
};

void write_all(int fd, const std::string& bytes, const std::string& path) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      throw Error("cannot write checkpoint " + path + ": " +
                  std::strerror(errno));
    done += static_cast<std::size_t>(w);
  }
}

std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos
             ? "."
             : (slash == 0 ? "/" : path.substr(0, slash));
}

// The fields in which two problem descriptions differ: "px = 2 there, 1
// in this run; nt = 200 there, 100 in this run". Empty when equal.
std::string problem_difference(const std::string& file_text,
                               const std::string& run_text) {
  if (file_text == run_text) return {};
  const auto parse = [](const std::string& t) {
    nlohmann::json j = nlohmann::json::parse(t, nullptr, false);
    return j.is_object() ? j : nlohmann::json::object();
  };
  const nlohmann::json there = parse(file_text), here = parse(run_text);
  std::set<std::string> keys;
  for (const auto& [k, v] : there.items()) keys.insert(k);
  for (const auto& [k, v] : here.items()) keys.insert(k);
  std::string out;
  for (const std::string& k : keys) {
    const std::string a = there.contains(k) ? there[k].dump() : "(absent)";
    const std::string b = here.contains(k) ? here[k].dump() : "(absent)";
    if (a == b) continue;
    out += (out.empty() ? "" : "; ") + k + " = " + a + " there, " + b +
           " in this run";
  }
  return out.empty() ? "its problem description differs" : out;
}

}  // namespace

uint64_t fnv1a(const char* data, std::size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < n; ++i)
    h = (h ^ static_cast<unsigned char>(data[i])) * 1099511628211ull;
  return h;
}

std::string checkpoint_file(const std::string& prefix, int rank, int size) {
  return prefix + ".rank" + std::to_string(rank) + "of" + std::to_string(size);
}

std::string stage_checkpoint(const std::string& prefix,
                             int rank,
                             int size,
                             int history,
                             const LbfgsState& state) {
  Writer w;
  w.bytes().append(kMagic, sizeof(kMagic));
  const int32_t count = static_cast<int32_t>(state.s.size());
  const int64_t n = state.x.size();
  const int64_t fh = static_cast<int64_t>(state.f_history.size());
  w.put(int32_t{rank});
  w.put(int32_t{size});
  w.put(static_cast<int32_t>(state.kind));
  w.put(state.bounds_hash);
  w.put(state.problem);
  w.put(int32_t{history});
  w.put(n);
  w.put(int32_t{state.iteration});
  w.put(int32_t{state.evaluations});
  w.put(count);
  w.put(fh);
  w.put(state.f);
  w.put(state.initial_f);
  w.put(state.gamma);
  w.put(state.x);
  w.put(state.g);
  for (int i = 0; i < count; ++i) w.put(state.s[i]);
  for (int i = 0; i < count; ++i) w.put(state.y[i]);
  for (double r : state.rho) w.put(r);
  for (double f : state.f_history) w.put(f);
  for (double f : state.gnorm_history) w.put(f);
  if (state.kind == SolverKind::kLbfgsb) {
    w.put(state.sy);
    w.put(state.ss);
  }
  w.put(fnv1a(w.bytes().data(), w.bytes().size()));

  const std::string temporary = checkpoint_file(prefix, rank, size) + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    return "cannot create checkpoint " + temporary + ": " +
           std::strerror(errno);
  }
  std::string problem;
  try {
    write_all(fd, w.bytes(), temporary);
    if (::fsync(fd) != 0) {
      problem =
          "cannot sync checkpoint " + temporary + ": " + std::strerror(errno);
    }
  } catch (const Error& e) {
    problem = e.what();
  }
  if (::close(fd) != 0 && problem.empty()) {
    problem =
        "cannot write checkpoint " + temporary + ": " + std::strerror(errno);
  }
  if (!problem.empty()) ::unlink(temporary.c_str());
  return problem;
}

std::string commit_checkpoint(const std::string& prefix, int rank, int size) {
  const std::string path = checkpoint_file(prefix, rank, size);
  const std::string temporary = path + ".tmp";
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(temporary.c_str());
    return "cannot rename " + temporary + " to " + path + ": " + why;
  }
  const int dir = ::open(directory_of(path).c_str(), O_RDONLY);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return {};
}

void save_checkpoint(const Reducer& reduce,
                     const LbfgsOptions& options,
                     int rank,
                     int size,
                     const LbfgsState& state) {
  const std::string staged =
      checkpoint_file(options.checkpoint_path, rank, size) + ".tmp";
  const auto raise = [&staged](const std::string& text) {
    ::unlink(staged.c_str());  // staged by this rank, never to be committed
    throw Error(
        text + " (the previous checkpoint is unchanged)", {}, {}, "checkpoint");
  };
  agree_or_throw(
      reduce,
      stage_checkpoint(
          options.checkpoint_path, rank, size, options.history, state),
      raise);
  agree_or_throw(reduce,
                 commit_checkpoint(options.checkpoint_path, rank, size));
}

namespace {

// A checkpoint's header, as written by write_checkpoint.
struct Header {
  int32_t rank, size, kind, history, iteration, evaluations, count;
  uint64_t bounds;
  std::string problem;
  int64_t n, trace_length;

  bool read(Reader& r) {
    return r.get(&rank) && r.get(&size) && r.get(&kind) && r.get(&bounds) &&
           r.get(&problem) && r.get(&history) && r.get(&n) &&
           r.get(&iteration) && r.get(&evaluations) && r.get(&count) &&
           r.get(&trace_length);
  }
};

// Why a checkpoint with header `h` cannot resume the run whose own header
// would be `run` (its rank, size, kind, history, bounds, problem and n; an
// empty problem matches any), or "".
std::string header_mismatch(const Header& h, const Header& run) {
  const int32_t rank = run.rank, size = run.size, history = run.history;
  const int64_t n = run.n;
  const std::string& problem = run.problem;
  if (h.size != size || h.rank != rank) {
    return "written by rank " + std::to_string(h.rank) + " of " +
           std::to_string(h.size) + ", this is rank " + std::to_string(rank) +
           " of " + std::to_string(size);
  }
  if (!problem.empty()) {
    const std::string diff = problem_difference(h.problem, problem);
    if (!diff.empty()) return "written for another problem: " + diff;
  }
  static const char* const kKinds[] = {"L-BFGS (no bounds)", "L-BFGS-B"};
  if (h.kind != run.kind) {
    return std::string("written by an ") +
           (h.kind == 0 || h.kind == 1 ? kKinds[h.kind] : "unknown") +
           " run, this run is " + kKinds[run.kind];
  }
  if (h.bounds != run.bounds)
    return "written with other bounds than this run's";
  if (h.n != n) {
    return "holds " + std::to_string(h.n) + " variables, this run has " +
           std::to_string(n);
  }
  if (h.history != history) {
    return "written with history " + std::to_string(h.history) +
           ", this run uses " + std::to_string(history);
  }
  return "";
}

// The state after the header into *s; nullptr, or what is short.
const char* read_state(Reader& r,
                       const Header& h,
                       SolverKind kind,
                       LbfgsState* s) {
  const int count = h.count;
  const int64_t n = h.n;
  if (!r.get(&s->f) || !r.get(&s->initial_f) || !r.get(&s->gamma) ||
      !r.get(&s->x, n) || !r.get(&s->g, n)) {
    return "short state";
  }
  s->s.resize(count);
  s->y.resize(count);
  s->rho.resize(kind == SolverKind::kLbfgs ? count : 0);
  for (int i = 0; i < count; ++i) {
    if (!r.get(&s->s[i], n)) return "short history";
  }
  for (int i = 0; i < count; ++i) {
    if (!r.get(&s->y[i], n)) return "short history";
  }
  for (double& rho : s->rho) {
    if (!r.get(&rho)) return "short history";
  }
  s->f_history.resize(h.trace_length);
  s->gnorm_history.resize(h.trace_length);
  for (double& f : s->f_history) {
    if (!r.get(&f)) return "short trace";
  }
  for (double& gnorm : s->gnorm_history) {
    if (!r.get(&gnorm)) return "short trace";
  }
  if (kind == SolverKind::kLbfgsb &&
      (!r.get(&s->sy, count) || !r.get(&s->ss, count))) {
    return "short history";
  }
  return nullptr;
}

}  // namespace

std::string read_checkpoint(const std::string& prefix,
                            int rank,
                            int size,
                            int64_t n,
                            int history,
                            SolverKind kind,
                            uint64_t bounds_hash,
                            const std::string& problem,
                            LbfgsState* state,
                            const std::string& suffix) {
  const std::string path = checkpoint_file(prefix, rank, size) + suffix;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return path + ": cannot open (was the checkpoint written by a run with " +
           std::to_string(size) + " ranks?)";
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  auto corrupt = [&](const std::string& why) {
    return path + ": corrupted checkpoint (" + why + ")";
  };
  if (bytes.size() < sizeof(kMagic) + sizeof(uint64_t) ||
      std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return corrupt("not an adgraph L-BFGS checkpoint");
  }
  uint64_t stored;
  std::memcpy(
      &stored, bytes.data() + bytes.size() - sizeof(stored), sizeof(stored));
  if (stored != fnv1a(bytes.data(), bytes.size() - sizeof(stored))) {
    return corrupt("checksum mismatch: truncated or modified");
  }
  // Between the magic and the checksum.
  const std::string body = bytes.substr(
      sizeof(kMagic), bytes.size() - sizeof(kMagic) - sizeof(stored));
  Reader r(body);
  Header h;
  if (!h.read(r)) return corrupt("short header");
  const Header run{.rank = rank,
                   .size = size,
                   .kind = static_cast<int32_t>(kind),
                   .history = history,
                   .bounds = bounds_hash,
                   .problem = problem,
                   .n = n};
  const std::string mismatch = header_mismatch(h, run);
  if (!mismatch.empty()) return path + ": " + mismatch;
  if (h.count < 0 || h.count > history || h.trace_length < 0)
    return corrupt("bad counts");
  LbfgsState s;
  s.kind = kind;
  s.bounds_hash = bounds_hash;
  s.problem = h.problem;
  s.iteration = h.iteration;
  s.evaluations = h.evaluations;
  if (const char* shortage = read_state(r, h, kind, &s))
    return corrupt(shortage);
  if (r.position() != body.size()) return corrupt("trailing bytes");
  *state = std::move(s);
  return {};
}

void load_checkpoint(const Reducer& reduce,
                     const LbfgsOptions& options,
                     int rank,
                     int size,
                     int64_t n,
                     SolverKind kind,
                     uint64_t bounds_hash,
                     LbfgsState* state) {
  const auto read = [&](LbfgsState* into, const std::string& suffix) {
    return read_checkpoint(options.checkpoint_path,
                           rank,
                           size,
                           n,
                           options.history,
                           kind,
                           bounds_hash,
                           options.checkpoint_problem,
                           into,
                           suffix);
  };
  agree_or_throw(reduce, read(state, ""));
  CommContext* comm = reduce.comm();
  if (comm == nullptr) return;
  const double first = comm->allreduce_min(state->iteration);
  const double last = comm->allreduce_max(state->iteration);
  if (first == last) return;
  const std::string mixed =
      options.checkpoint_path + ".rank*of" + std::to_string(size) +
      ": the ranks' files are from different iterations (" +
      std::to_string(static_cast<int>(first)) + " to " +
      std::to_string(static_cast<int>(last)) + "): not one checkpoint";
  // A rank renames its staged file only after every rank has staged and
  // synced its own (save_checkpoint). A run stopped between that agreement
  // and the last rename (a host lost while the agreement's result was on
  // its way) leaves the newer iteration committed on some ranks and staged
  // on the others: those finish the commit. Anything else is refused.
  std::string problem;
  const std::string staged_file =
      checkpoint_file(options.checkpoint_path, rank, size) + ".tmp";
  if (state->iteration != last && !std::filesystem::exists(staged_file)) {
    problem = "rank " + std::to_string(rank) + " has no staged file (" +
              staged_file + ") to complete it from";
  } else if (state->iteration != last) {
    LbfgsState staged;
    problem = read(&staged, ".tmp");
    if (problem.empty() && staged.iteration != last) {
      problem = staged_file + ": staged at iteration " +
                std::to_string(staged.iteration) + ", not " +
                std::to_string(static_cast<int>(last));
    }
    if (problem.empty())
      problem = commit_checkpoint(options.checkpoint_path, rank, size);
    if (problem.empty()) *state = std::move(staged);
  }
  agree_or_throw(reduce, problem, [&mixed](const std::string& why) {
    throw Error(mixed + "; " + why, {}, {}, "checkpoint");
  });
}

}  // namespace adgraph::optim::detail
