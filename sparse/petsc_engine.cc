// The PETSc engine: the only code that calls PETSc.
//
// PETSc's own world is each process alone (PETSC_COMM_WORLD =
// MPI_COMM_SELF), initialised when a rank first needs it, with its signal
// handlers off and its errors returned (as RunError), not printed: the
// initialisation then waits for no other rank, whichever ranks build a
// sparse node first, and every PETSc object lives on its matrix's own
// communicator. PETSc ends at the start of MPI_Finalize (at_mpi_finalize);
// objects that outlive it are not destroyed.
#include <petscksp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "mpi_ops/communicator.h"
#include "mpi_ops/mpi_environment.h"
#include "sparse/operator_impl.h"
#include "sparse/stencil_block.h"

namespace adgraph::sparse {
namespace {

// ---------------------------------------------------------------------------
// PETSc's start and end, error checks, gathers and prolongations.

bool petsc_ended = false;

void end_petsc() {
  if (petsc_ended) return;
  petsc_ended = true;
  PetscFinalize();
}

// Throws RunError naming `call` with PETSc's message unless `code` is 0.
void check(PetscErrorCode code, const char* call) {
  if (code == 0) return;
  const char* text = nullptr;
  PetscErrorMessage(code, &text, nullptr);
  throw RunError(std::string("PETSc's ") + call +
                 " failed: " + (text ? text : "error " + std::to_string(code)));
}

// Starts PETSc on this process alone (PETSC_COMM_WORLD = MPI_COMM_SELF),
// once; it ends at the start of MPI_Finalize.
void start_petsc() {
  PetscBool started = PETSC_FALSE;
  PetscInitialized(&started);
  if (started) return;
  PETSC_COMM_WORLD = MPI_COMM_SELF;
  static char arg0[] = "adgraph", arg1[] = "-no_signal_handler";
  static char* args[] = {arg0, arg1, nullptr};
  static int argc = 2;
  static char** argv = args;
  check(PetscInitialize(&argc, &argv, nullptr, nullptr), "PetscInitialize");
  PetscPushErrorHandler(PetscReturnErrorHandler, nullptr);
  at_mpi_finalize(end_petsc);
}

// False once PETSc has ended (objects are then left undestroyed).
bool petsc_alive() { return !petsc_ended; }

// A sequential vector `*out` and the scatter that fills it with the entries
// `columns` (global indices) of vectors laid out like `like` (collective).
void make_gather(Vec like,
                 const std::vector<PetscInt>& columns,
                 Vec* out,
                 VecScatter* scatter) {
  const auto n = static_cast<PetscInt>(columns.size());
  IS is = nullptr;
  check(ISCreateGeneral(
            PETSC_COMM_SELF, n, columns.data(), PETSC_COPY_VALUES, &is),
        "ISCreateGeneral");
  check(VecCreateSeq(PETSC_COMM_SELF, n, out), "VecCreateSeq");
  const PetscErrorCode made =
      VecScatterCreate(like, is, *out, nullptr, scatter);
  ISDestroy(&is);
  check(made, "VecScatterCreate");
}

// An assembled AIJ matrix of this rank's rows of a prolongation.
Mat prolongation_matrix(MPI_Comm comm, const Prolongation& p) {
  std::vector<PetscInt> offsets(p.pattern.row_offsets.begin(),
                                p.pattern.row_offsets.end());
  std::vector<PetscInt> columns(p.pattern.columns.begin(),
                                p.pattern.columns.end());
  Mat m = nullptr;
  check(MatCreate(comm, &m), "MatCreate");
  check(MatSetSizes(m,
                    static_cast<PetscInt>(p.pattern.local_rows()),
                    static_cast<PetscInt>(p.coarse_rows),
                    PETSC_DETERMINE,
                    PETSC_DETERMINE),
        "MatSetSizes");
  check(MatSetType(m, MATAIJ), "MatSetType");
  check(MatSeqAIJSetPreallocationCSR(
            m, offsets.data(), columns.data(), p.values.data()),
        "MatSeqAIJSetPreallocationCSR");
  check(MatMPIAIJSetPreallocationCSR(
            m, offsets.data(), columns.data(), p.values.data()),
        "MatMPIAIJSetPreallocationCSR");
  return m;
}

// ---------------------------------------------------------------------------
// The engine.

// Aᵀ solves on an explicit transpose: BoomerAMG's transpose solve returns
// zero on Debian's PETSc; PCMG's uses the same smoothers transposed.
bool transposes_explicitly(const SolverOptions& o) {
  return o.pc == "hypre" || o.pc == "mg";
}

// A Vec viewing a tensor's memory for one call.
class Placed final {
 public:
  Placed(Vec v, const double* data) : v_(v) {
    check(VecPlaceArray(v_, const_cast<double*>(data)), "VecPlaceArray");
  }
  ~Placed() { VecResetArray(v_); }
  Placed(const Placed&) = delete;
  Placed& operator=(const Placed&) = delete;

 private:
  Vec v_;
};

bool all_finite(const double* x, int64_t n) {
  bool ok = true;
  for (int64_t i = 0; i < n; ++i) ok &= std::isfinite(x[i]);
  return ok;
}

std::string format_double(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

class PetscEngine final : public SparseEngine {
 public:
  PetscEngine(const CsrPattern& pattern,
              int64_t global_rows,
              const std::vector<Prolongation>& multigrid,
              CommContext& comm,
              SparseStats& stats);
  ~PetscEngine() override;

  void multiply(const Tensor& values,
                const double* x,
                double* y,
                bool transpose) override;
  void outer(const double* u, const double* v, double* w) override;
  void solve(const SolverOptions& options,
             const Tensor& values,
             const double* b,
             double* x,
             bool transpose,
             bool for_transpose) override;

  // The shell matrix's products: y = A·x by stencil_, y = Aᵀ·x by the
  // assembled matrix (collective).
  PetscErrorCode multiply_stencil(Vec x, Vec y);
  PetscErrorCode multiply_transpose(Vec x, Vec y) {
    return MatMultTranspose(a_, x, y);
  }

 private:
  // One KSP per set of options; with BoomerAMG, whose transpose solve
  // returns zero on Debian's PETSc, a second one on an explicit Aᵀ.
  struct Solver {
    KSP ksp = nullptr;
    uint64_t ready = 0;  // the matrix version its preconditioner has
    Mat at = nullptr;
    KSP ksp_t = nullptr;
    uint64_t ready_t = 0;
    // With pc "mg": per coarse level, finest first, A·P and the level's
    // operator Pᵀ·(A·P) (of ksp's matrix and of ksp_t's).
    std::vector<Mat> coarse, coarse_t;
  };

  // Assembles `values` when they differ from the matrix's on any rank.
  // With `rhs`, first throws the same RunError on every rank when any
  // rank's values or right-hand side hold NaN or Inf.
  void update(const Tensor& values, const double* rhs);
  KSP make_ksp(const SolverOptions& options, Mat a);
  // PCMG on the prolongations and their assembled transposes as the
  // restrictions (set_operators gives the levels their operators), with a
  // Chebyshev smoother preconditioned by Jacobi on every level but the
  // coarsest.
  void set_up_multigrid(PC pc);
  // Gives `ksp` its operators (the product's and the preconditioner's)
  // and, with pc "mg", its levels theirs: the finest amat and pmat, the
  // coarser ones pmat's Galerkin products Pᵀ(AP), computed into `coarse`.
  void set_operators(KSP ksp, Mat amat, Mat pmat, std::vector<Mat>& coarse);
  KSP ready_ksp(const SolverOptions& options, bool transpose);
  // |b − A·x| / |b| (Aᵀ when `transpose`) of the solve whose b and x are
  // placed in in_ and out_ (collective).
  double true_residual(bool transpose);
  // Checks once per assembled set of values that A is symmetric (to
  // kSymmetryTolerance·|A|_∞), for a solve with A that stands for one with
  // Aᵀ; RunError on every rank otherwise (collective).
  void check_symmetric();

  // A solve stopped by its iteration count (preonly) succeeds when its true
  // relative residual is at most max(rtol, this).
  static constexpr double kPreonlyResidual = 1e-6;
  static constexpr double kSymmetryTolerance = 1e-10;
  // When every rank's rows are a StencilBlock: a shell matrix with its
  // product, the Krylov methods' and smoothers' operator (the assembled
  // matrix stays the preconditioners').
  void make_stencil_shell();

  CommContext& comm_;
  SparseStats& stats_;
  const CsrPattern& pattern_;
  MPI_Comm mpi_comm_ = MPI_COMM_NULL;
  int64_t rows_ = 0, entries_ = 0;
  std::vector<PetscInt> columns_;
  Mat a_ = nullptr;
  Vec in_ = nullptr, out_ = nullptr;
  Vec residual_ = nullptr;          // true_residual's
  uint64_t symmetric_checked_ = 0;  // the version check_symmetric passed
  std::vector<double> assembled_;
  uint64_t version_ = 0;  // 0: never assembled
  VecScatter gather_ = nullptr;
  Vec gathered_ = nullptr;
  std::vector<PetscInt> gathered_index_;  // per entry, into gathered_
  std::vector<PetscInt> row_of_;          // per entry, its local row
  std::map<std::string, Solver> solvers_;
  // Finest first. The restrictions are the prolongations' transposes,
  // assembled: PETSc's transpose products (and its PᵀAP) add other ranks'
  // contributions in the order they arrive, so with three or more ranks
  // meeting at a point their rounding changed from run to run. With
  // Pᵀ assembled every product sums its own rows in a fixed order.
  std::vector<Mat> prolongations_, restrictions_;
  StencilBlock stencil_;
  bool stencil_fits_ = false;  // this rank's last values are a stencil
  bool use_stencil_ = false;   // every rank's are: solves use shell_
  Mat shell_ = nullptr;
  VecScatter halo_ = nullptr;
  Vec ghosts_ = nullptr;
};

PetscErrorCode stencil_product(Mat shell, Vec x, Vec y) {
  void* engine = nullptr;
  const PetscErrorCode code = MatShellGetContext(shell, &engine);
  if (code != 0) return code;
  return static_cast<PetscEngine*>(engine)->multiply_stencil(x, y);
}

// Aᵀ·x (KSPSolveTranspose's) by the assembled matrix.
PetscErrorCode stencil_transpose_product(Mat shell, Vec x, Vec y) {
  void* engine = nullptr;
  const PetscErrorCode code = MatShellGetContext(shell, &engine);
  if (code != 0) return code;
  return static_cast<PetscEngine*>(engine)->multiply_transpose(x, y);
}

PetscEngine::PetscEngine(const CsrPattern& pattern,
                         int64_t global_rows,
                         const std::vector<Prolongation>& multigrid,
                         CommContext& comm,
                         SparseStats& stats)
    : comm_(comm), stats_(stats), pattern_(pattern) {
  start_petsc();
  auto* mpi = dynamic_cast<Communicator*>(&comm);
  if (mpi == nullptr)
    throw RunError("a sparse matrix needs an MPI communicator");
  mpi_comm_ = MPI_Comm_f2c(static_cast<MPI_Fint>(mpi->fortran_handle()));
  rows_ = pattern.local_rows();
  entries_ = pattern.local_entries();
  const PetscInt n = static_cast<PetscInt>(rows_);
  const PetscInt big_n = static_cast<PetscInt>(global_rows);
  std::vector<PetscInt> offsets(pattern.row_offsets.begin(),
                                pattern.row_offsets.end());
  columns_.assign(pattern.columns.begin(), pattern.columns.end());
  check(MatCreate(mpi_comm_, &a_), "MatCreate");
  check(MatSetSizes(a_, n, n, big_n, big_n), "MatSetSizes");
  check(MatSetType(a_, MATAIJ), "MatSetType");
  check(MatSeqAIJSetPreallocationCSR(
            a_, offsets.data(), columns_.data(), nullptr),
        "MatSeqAIJSetPreallocationCSR");
  check(MatMPIAIJSetPreallocationCSR(
            a_, offsets.data(), columns_.data(), nullptr),
        "MatMPIAIJSetPreallocationCSR");
  check(MatSetOption(a_, MAT_NEW_NONZERO_LOCATION_ERR, PETSC_TRUE),
        "MatSetOption");
  check(VecCreateMPIWithArray(mpi_comm_, 1, n, big_n, nullptr, &in_),
        "VecCreateMPIWithArray");
  check(VecCreateMPIWithArray(mpi_comm_, 1, n, big_n, nullptr, &out_),
        "VecCreateMPIWithArray");
  // The gather of v at this rank's columns, for outer().
  std::vector<PetscInt> unique = columns_;
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  for (PetscInt j : columns_) {
    gathered_index_.push_back(static_cast<PetscInt>(
        std::lower_bound(unique.begin(), unique.end(), j) - unique.begin()));
  }
  for (int64_t i = 0; i < rows_; ++i) {
    for (int64_t k = pattern.row_offsets[i]; k < pattern.row_offsets[i + 1];
         ++k)
      row_of_.push_back(static_cast<PetscInt>(i));
  }
  make_gather(in_, unique, &gathered_, &gather_);
  for (const Prolongation& p : multigrid) {
    prolongations_.push_back(prolongation_matrix(mpi_comm_, p));
    Mat r = nullptr;
    check(MatTranspose(prolongations_.back(), MAT_INITIAL_MATRIX, &r),
          "MatTranspose");
    restrictions_.push_back(r);
  }
  make_stencil_shell();
}

void PetscEngine::make_stencil_shell() {
  StencilBlock block(pattern_);
  double shaped = block.has_shape() ? 1.0 : 0.0;
  comm_.allreduce(&shaped, &shaped, 1, ReduceOp::kMin);
  if (shaped == 0) return;
  stencil_ = std::move(block);
  const std::vector<int64_t>& ghost = stencil_.ghost_columns();
  make_gather(
      in_, std::vector<PetscInt>(ghost.begin(), ghost.end()), &ghosts_, &halo_);
  PetscInt n = 0, big_n = 0;
  check(VecGetLocalSize(in_, &n), "VecGetLocalSize");
  check(VecGetSize(in_, &big_n), "VecGetSize");
  check(MatCreateShell(mpi_comm_, n, n, big_n, big_n, this, &shell_),
        "MatCreateShell");
  check(MatShellSetOperation(shell_,
                             MATOP_MULT,
                             reinterpret_cast<void (*)(void)>(stencil_product)),
        "MatShellSetOperation");
  check(MatShellSetOperation(
            shell_,
            MATOP_MULT_TRANSPOSE,
            reinterpret_cast<void (*)(void)>(stencil_transpose_product)),
        "MatShellSetOperation");
}

PetscErrorCode PetscEngine::multiply_stencil(Vec x, Vec y) {
  PetscErrorCode code =
      VecScatterBegin(halo_, x, ghosts_, INSERT_VALUES, SCATTER_FORWARD);
  if (code != 0) return code;
  const double *xa = nullptr, *g = nullptr;
  double* ya = nullptr;
  if ((code = VecGetArrayRead(x, &xa)) != 0) return code;
  if ((code = VecGetArray(y, &ya)) != 0) return code;
  stencil_.multiply_own(xa, ya);
  code = VecScatterEnd(halo_, x, ghosts_, INSERT_VALUES, SCATTER_FORWARD);
  if (code == 0) code = VecGetArrayRead(ghosts_, &g);
  if (code == 0) {
    stencil_.add_off_rank(g, ya);
    VecRestoreArrayRead(ghosts_, &g);
  }
  VecRestoreArray(y, &ya);
  VecRestoreArrayRead(x, &xa);
  ++stats_.stencil_products;
  return code;
}

PetscEngine::~PetscEngine() {
  if (!petsc_alive()) return;
  for (auto& [key, s] : solvers_) {
    KSPDestroy(&s.ksp);
    KSPDestroy(&s.ksp_t);
    MatDestroy(&s.at);
    for (Mat& m : s.coarse) MatDestroy(&m);
    for (Mat& m : s.coarse_t) MatDestroy(&m);
  }
  for (Mat& p : prolongations_) MatDestroy(&p);
  for (Mat& r : restrictions_) MatDestroy(&r);
  MatDestroy(&shell_);
  VecScatterDestroy(&halo_);
  VecDestroy(&ghosts_);
  VecScatterDestroy(&gather_);
  VecDestroy(&gathered_);
  VecDestroy(&in_);
  VecDestroy(&out_);
  VecDestroy(&residual_);
  MatDestroy(&a_);
}

void PetscEngine::update(const Tensor& values, const double* rhs) {
  const double* v = values.data();
  const bool changed =
      version_ == 0 ||
      std::memcmp(v, assembled_.data(), entries_ * sizeof(double)) != 0;
  if (changed && shell_) stencil_fits_ = stencil_.take_values(v);
  double flags[4] = {changed ? 1.0 : 0.0,
                     rhs && !all_finite(v, entries_) ? 1.0 : 0.0,
                     rhs && !all_finite(rhs, rows_) ? 1.0 : 0.0,
                     stencil_fits_ ? 0.0 : 1.0};
  comm_.allreduce(flags, flags, 4, ReduceOp::kMax);
  use_stencil_ = shell_ && flags[3] == 0;
  if (flags[1] != 0) {
    throw RunError("the matrix values hold NaN or Inf (on some rank)");
  }
  if (flags[2] != 0) {
    throw RunError("the right-hand side holds NaN or Inf (on some rank)");
  }
  if (flags[0] == 0) return;
  const auto& off = pattern_.row_offsets;
  for (int64_t i = 0; i < rows_; ++i) {
    const PetscInt row = static_cast<PetscInt>(pattern_.first_row + i);
    check(MatSetValues(a_,
                       1,
                       &row,
                       static_cast<PetscInt>(off[i + 1] - off[i]),
                       columns_.data() + off[i],
                       v + off[i],
                       INSERT_VALUES),
          "MatSetValues");
  }
  check(MatAssemblyBegin(a_, MAT_FINAL_ASSEMBLY), "MatAssemblyBegin");
  check(MatAssemblyEnd(a_, MAT_FINAL_ASSEMBLY), "MatAssemblyEnd");
  assembled_.assign(v, v + entries_);
  ++version_;
  ++stats_.assemblies;
}

void PetscEngine::multiply(const Tensor& values,
                           const double* x,
                           double* y,
                           bool transpose) {
  update(values, nullptr);
  Placed in(in_, x), out(out_, y);
  if (transpose) {
    check(MatMultTranspose(a_, in_, out_), "MatMultTranspose");
  } else {
    check(MatMult(a_, in_, out_), "MatMult");
  }
}

void PetscEngine::outer(const double* u, const double* v, double* w) {
  Placed in(in_, v);
  check(
      VecScatterBegin(gather_, in_, gathered_, INSERT_VALUES, SCATTER_FORWARD),
      "VecScatterBegin");
  check(VecScatterEnd(gather_, in_, gathered_, INSERT_VALUES, SCATTER_FORWARD),
        "VecScatterEnd");
  const double* g = nullptr;
  check(VecGetArrayRead(gathered_, &g), "VecGetArrayRead");
  for (int64_t k = 0; k < entries_; ++k) {
    w[k] = u[row_of_[k]] * g[gathered_index_[k]];
  }
  VecRestoreArrayRead(gathered_, &g);
}

KSP PetscEngine::make_ksp(const SolverOptions& o, Mat a) {
  KSP ksp = nullptr;
  check(KSPCreate(mpi_comm_, &ksp), "KSPCreate");
  static const std::map<std::string, KSPType> ksps = {{"cg", KSPCG},
                                                      {"gmres", KSPGMRES},
                                                      {"bcgs", KSPBCGS},
                                                      {"preonly", KSPPREONLY}};
  static const std::map<std::string, PCType> pcs = {{"none", PCNONE},
                                                    {"jacobi", PCJACOBI},
                                                    {"bjacobi", PCBJACOBI},
                                                    {"ilu", PCBJACOBI},
                                                    {"gamg", PCGAMG},
                                                    {"hypre", PCHYPRE},
                                                    {"lu", PCLU},
                                                    {"mg", PCMG}};
  check(KSPSetType(ksp, ksps.at(o.ksp)), "KSPSetType");
  PC pc = nullptr;
  check(KSPGetPC(ksp, &pc), "KSPGetPC");
  check(PCSetType(pc, pcs.at(o.pc)), "PCSetType");
  if (o.pc == "hypre") check(PCHYPRESetType(pc, "boomeramg"), "PCHYPRESetType");
  if (o.pc == "lu") {
    check(PCFactorSetMatSolverType(pc, MATSOLVERMUMPS),
          "PCFactorSetMatSolverType");
  }
  if (o.pc == "mg") set_up_multigrid(pc);
  check(KSPSetTolerances(ksp, o.rtol, o.atol, PETSC_DEFAULT, o.max_it),
        "KSPSetTolerances");
  check(KSPSetOperators(ksp, a, a), "KSPSetOperators");
  if (!o.prefix.empty()) {
    check(KSPSetOptionsPrefix(ksp, (o.prefix + "_").c_str()),
          "KSPSetOptionsPrefix");
    check(KSPSetFromOptions(ksp), "KSPSetFromOptions");
  }
  return ksp;
}

void PetscEngine::set_up_multigrid(PC pc) {
  const auto levels = static_cast<PetscInt>(prolongations_.size()) + 1;
  check(PCMGSetLevels(pc, levels, nullptr), "PCMGSetLevels");
  for (PetscInt l = 1; l < levels; ++l) {
    check(PCMGSetInterpolation(pc, l, prolongations_[levels - 1 - l]),
          "PCMGSetInterpolation");
    check(PCMGSetRestriction(pc, l, restrictions_[levels - 1 - l]),
          "PCMGSetRestriction");
  }
  for (PetscInt l = 1; l < levels; ++l) {
    KSP smoother = nullptr;
    PC smoother_pc = nullptr;
    check(PCMGGetSmoother(pc, l, &smoother), "PCMGGetSmoother");
    check(KSPGetPC(smoother, &smoother_pc), "KSPGetPC");
    check(PCSetType(smoother_pc, PCJACOBI), "PCSetType");
  }
}

void PetscEngine::set_operators(KSP ksp,
                                Mat amat,
                                Mat pmat,
                                std::vector<Mat>& coarse) {
  PC pc = nullptr;
  PetscBool multigrid = PETSC_FALSE;
  check(KSPGetPC(ksp, &pc), "KSPGetPC");
  check(PetscObjectTypeCompare(
            reinterpret_cast<PetscObject>(pc), PCMG, &multigrid),
        "PetscObjectTypeCompare");
  if (multigrid) {
    const MatReuse reuse =
        coarse.empty() ? MAT_INITIAL_MATRIX : MAT_REUSE_MATRIX;
    const auto levels = static_cast<PetscInt>(prolongations_.size()) + 1;
    coarse.resize(2 * prolongations_.size());
    Mat fine = pmat;
    for (PetscInt l = 0; l + 1 < levels; ++l) {
      Mat& ap = coarse[2 * l];
      Mat& rap = coarse[2 * l + 1];
      check(MatMatMult(fine, prolongations_[l], reuse, PETSC_DEFAULT, &ap),
            "MatMatMult");
      check(MatMatMult(restrictions_[l], ap, reuse, PETSC_DEFAULT, &rap),
            "MatMatMult");
      fine = rap;
      KSP smoother = nullptr;
      check(PCMGGetSmoother(pc, levels - 2 - l, &smoother), "PCMGGetSmoother");
      check(KSPSetOperators(smoother, rap, rap), "KSPSetOperators");
    }
    KSP finest = nullptr;
    check(PCMGGetSmoother(pc, levels - 1, &finest), "PCMGGetSmoother");
    check(KSPSetOperators(finest, amat, pmat), "KSPSetOperators");
  }
  check(KSPSetOperators(ksp, amat, pmat), "KSPSetOperators");
}

KSP PetscEngine::ready_ksp(const SolverOptions& o, bool transpose) {
  Solver& s = solvers_[o.to_attrs().dump()];
  if (!s.ksp) s.ksp = make_ksp(o, a_);
  const bool explicit_transpose = transpose && transposes_explicitly(o);
  if (!explicit_transpose) {
    if (s.ready != version_) {
      set_operators(s.ksp, use_stencil_ ? shell_ : a_, a_, s.coarse);
      check(KSPSetUp(s.ksp), "KSPSetUp");
      s.ready = version_;
      ++stats_.setups;
    }
    return s.ksp;
  }
  if (s.ready_t != version_) {
    check(MatTranspose(a_, s.at ? MAT_REUSE_MATRIX : MAT_INITIAL_MATRIX, &s.at),
          "MatTranspose");
    if (!s.ksp_t) s.ksp_t = make_ksp(o, s.at);
    set_operators(s.ksp_t, s.at, s.at, s.coarse_t);
    check(KSPSetUp(s.ksp_t), "KSPSetUp");
    s.ready_t = version_;
    ++stats_.setups;
  }
  return s.ksp_t;
}

void PetscEngine::solve(const SolverOptions& o,
                        const Tensor& values,
                        const double* b,
                        double* x,
                        bool transpose,
                        bool for_transpose) {
  update(values, b);
  if (for_transpose) check_symmetric();
  KSP ksp = ready_ksp(o, transpose);
  Placed in(in_, b), out(out_, x);
  if (transpose && !transposes_explicitly(o)) {
    check(KSPSolveTranspose(ksp, in_, out_), "KSPSolveTranspose");
    ++stats_.transpose_solves;
  } else {
    check(KSPSolve(ksp, in_, out_), "KSPSolve");
    ++(transpose ? stats_.transpose_solves : stats_.solves);
  }
  KSPConvergedReason reason = KSP_CONVERGED_ITERATING;
  PetscInt its = 0;
  check(KSPGetConvergedReason(ksp, &reason), "KSPGetConvergedReason");
  check(KSPGetIterationNumber(ksp, &its), "KSPGetIterationNumber");
  stats_.last_iterations = its;
  const std::string which = transpose ? "the transpose solve" : "the solve";
  const std::string settings =
      "(ksp " + o.ksp + ", pc " + o.pc + ", rtol " + format_double(o.rtol) +
      ", max_it " + std::to_string(o.max_it) +
      (o.prefix.empty() ? "" : ", prefix " + o.prefix) + ")";
  if (reason < 0 || reason == KSP_CONVERGED_ITERATING) {
    throw RunError(which + " did not converge: " + KSPConvergedReasons[reason] +
                   " after " + std::to_string(its) +
                   (its == 1 ? " iteration " : " iterations ") + settings);
  }
  // Stopped by its iteration count, not by a residual test (preonly, or
  // options given through the prefix): the true residual decides.
  if (reason == KSP_CONVERGED_ITS) {
    const double relative = true_residual(transpose);
    const double limit = std::max(o.rtol, kPreonlyResidual);
    if (!(relative <= limit)) {
      throw RunError(which + " stopped after " + std::to_string(its) +
                     (its == 1 ? " iteration" : " iterations") +
                     " without a convergence test, and its true residual "
                     "|b - A x| / |b| is " +
                     format_double(relative) + ", above " +
                     format_double(limit) +
                     ": not a solution (preonly needs a direct solver, pc "
                     "\"lu\") " +
                     settings);
    }
  }
}

double PetscEngine::true_residual(bool transpose) {
  if (!residual_) check(VecDuplicate(in_, &residual_), "VecDuplicate");
  if (transpose) {
    check(MatMultTranspose(a_, out_, residual_), "MatMultTranspose");
  } else {
    check(MatMult(a_, out_, residual_), "MatMult");
  }
  check(VecAYPX(residual_, -1.0, in_), "VecAYPX");
  PetscReal r = 0, b = 0;
  check(VecNorm(residual_, NORM_2, &r), "VecNorm");
  check(VecNorm(in_, NORM_2, &b), "VecNorm");
  return b > 0 ? r / b : r;
}

void PetscEngine::check_symmetric() {
  if (symmetric_checked_ == version_) return;
  PetscReal scale = 0;
  check(MatNorm(a_, NORM_INFINITY, &scale), "MatNorm");
  PetscBool symmetric = PETSC_FALSE;
  check(MatIsSymmetric(a_, kSymmetryTolerance * scale, &symmetric),
        "MatIsSymmetric");
  if (!symmetric) {
    throw RunError(
        "symmetric=True, but the matrix is not symmetric (|a_ij - a_ji| "
        "above " +
        format_double(kSymmetryTolerance) +
        " |A|_inf for some entry): its adjoint would solve with A instead of "
        "A^T, a wrong gradient. Set symmetric=False (with a ksp other than "
        "cg)");
  }
  symmetric_checked_ = version_;
}

}  // namespace

std::unique_ptr<SparseEngine> make_engine(
    const CsrPattern& pattern,
    int64_t global_rows,
    const std::vector<Prolongation>& multigrid,
    CommContext& comm,
    SparseStats& stats) {
  return std::make_unique<PetscEngine>(
      pattern, global_rows, multigrid, comm, stats);
}

bool petsc_available() { return true; }

}  // namespace adgraph::sparse
