// The implicit (backward Euler) heat gradient: adgraph's time loop of
// sparse solves against PETSc's own TSAdjoint (TSBEULER, the trajectory in
// memory) on the same problem, matrix and Krylov solver.
//
//   u' = diag(κ)Δ_h u + f,  (I − dt·diag(κ)Δ_h) u⁺ = u + dt·f,
//   L = Σ w ⊙ u^NT,  dL/dκ,
// on an N × N grid of P × 1 patches, GMRES + Jacobi (rtol 1e-10; adgraph's
// with --ksp/--pc), dt = 100
// times the explicit limit. Each gradient is at a new κ (two fields
// alternate), so both assemble the matrix and set the preconditioner up
// once per gradient.
//
//   mpirun -n 1 bench/implicit_heat_tsadjoint --n 256 --nt 28 --mode time
//   mpirun -n 1 bench/implicit_heat_tsadjoint --n 256 --nt 28 --mode petsc
//   mpirun -n 1 bench/implicit_heat_tsadjoint --n 256 --nt 28 --mode adgraph
//       --checkpoints 4
// --mode time times both, interleaved, and compares their gradients;
// --mode petsc / adgraph runs one gradient and prints the peak resident
// memory of the process (compare separate processes).
#include <petscts.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>

#include "adgraph.h"
#include "bench/bench_timing.h"
#include "solvers/patch_operators.h"

using namespace adgraph;

namespace {

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;
}

// PETSc's TSAdjoint on the same discrete problem.
class PetscGradient {
 public:
  PetscGradient(const solvers::HeatConfig& c, const sparse::CsrPattern& p)
      : c_(c) {
    const PetscInt n = static_cast<PetscInt>(p.local_rows());
    const PetscInt big_n = static_cast<PetscInt>(c.nx) * c.ny;
    std::vector<PetscInt> off(p.row_offsets.begin(), p.row_offsets.end());
    std::vector<PetscInt> col(p.columns.begin(), p.columns.end());
    // Δ_h on the pattern (the diagonal entry −4/h², neighbours 1/h²).
    const double h2 = c.h() * c.h();
    std::vector<double> lap(p.columns.size());
    for (int64_t i = 0; i < p.local_rows(); ++i)
      for (int64_t k = p.row_offsets[i]; k < p.row_offsets[i + 1]; ++k)
        lap[k] = (p.columns[k] == p.first_row + i ? -4.0 : 1.0) / h2;
    make(&lap_, n, big_n, off, col, lap.data());
    make(&j_, n, big_n, off, col, lap.data());
    MatCreateAIJ(
        MPI_COMM_WORLD, n, n, big_n, big_n, 1, nullptr, 0, nullptr, &jp_);
    MatSetOption(jp_, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE);
    VecCreateMPI(MPI_COMM_WORLD, n, big_n, &f_);
    VecDuplicate(f_, &u_);
    VecDuplicate(f_, &kappa_);
    VecDuplicate(f_, &lambda_);
    VecDuplicate(f_, &mu_);
    VecDuplicate(f_, &work_);
    VecSet(f_, 1.0);
  }
  ~PetscGradient() {
    MatDestroy(&lap_);
    MatDestroy(&j_);
    MatDestroy(&jp_);
    for (Vec* v : {&f_, &u_, &kappa_, &lambda_, &mu_, &work_}) VecDestroy(v);
  }

  // dL/dκ (this rank's rows) at κ, from u0, with weights w.
  std::vector<double> gradient(const Tensor& kappa,
                               const Tensor& u0,
                               const Tensor& w) {
    set(kappa_, kappa);
    // J = diag(κ)Δ_h.
    MatCopy(lap_, j_, SAME_NONZERO_PATTERN);
    MatDiagonalScale(j_, kappa_, nullptr);
    TS ts;
    TSCreate(MPI_COMM_WORLD, &ts);
    TSSetProblemType(ts, TS_LINEAR);
    TSSetType(ts, TSBEULER);
    TSSetRHSFunction(ts, nullptr, rhs, this);
    TSSetRHSJacobian(ts, j_, j_, TSComputeRHSJacobianConstant, nullptr);
    TSSetRHSJacobianP(ts, jp_, rhs_p, this);
    TSSetTimeStep(ts, solvers::heat_dt(c_));
    TSSetMaxSteps(ts, c_.nt);
    TSSetExactFinalTime(ts, TS_EXACTFINALTIME_MATCHSTEP);
    SNES snes;
    TSGetSNES(ts, &snes);
    SNESSetType(snes, SNESKSPONLY);
    KSP ksp;
    SNESGetKSP(snes, &ksp);
    KSPSetType(ksp, KSPGMRES);
    PC pc;
    KSPGetPC(ksp, &pc);
    PCSetType(pc, PCJACOBI);
    KSPSetTolerances(ksp, 1e-10, 1e-50, PETSC_DEFAULT, 10000);
    TSSetSaveTrajectory(ts);
    TSTrajectory tj;
    TSGetTrajectory(ts, &tj);
    TSTrajectorySetType(tj, ts, TSTRAJECTORYMEMORY);
    set(u_, u0);
    TSSolve(ts, u_);
    set(lambda_, w);
    VecSet(mu_, 0.0);
    TSSetCostGradients(ts, 1, &lambda_, &mu_);
    TSAdjointSolve(ts);
    std::vector<double> out(u0.size());
    const double* m = nullptr;
    VecGetArrayRead(mu_, &m);
    std::copy(m, m + out.size(), out.begin());
    VecRestoreArrayRead(mu_, &m);
    TSDestroy(&ts);
    return out;
  }

 private:
  static void make(Mat* a,
                   PetscInt n,
                   PetscInt big_n,
                   std::vector<PetscInt>& off,
                   std::vector<PetscInt>& col,
                   const double* v) {
    MatCreate(MPI_COMM_WORLD, a);
    MatSetSizes(*a, n, n, big_n, big_n);
    MatSetType(*a, MATAIJ);
    MatSeqAIJSetPreallocationCSR(*a, off.data(), col.data(), v);
    MatMPIAIJSetPreallocationCSR(*a, off.data(), col.data(), v);
  }
  static void set(Vec v, const Tensor& t) {
    double* d = nullptr;
    VecGetArray(v, &d);
    std::copy(t.data(), t.data() + t.size(), d);
    VecRestoreArray(v, &d);
  }
  // F(u) = diag(κ)Δ_h u + f.
  static PetscErrorCode rhs(TS, PetscReal, Vec u, Vec out, void* self) {
    auto* g = static_cast<PetscGradient*>(self);
    MatMult(g->j_, u, out);
    VecAXPY(out, 1.0, g->f_);
    return 0;
  }
  // ∂F/∂κ = diag(Δ_h u).
  static PetscErrorCode rhs_p(TS, PetscReal, Vec u, Mat a, void* self) {
    auto* g = static_cast<PetscGradient*>(self);
    MatMult(g->lap_, u, g->work_);
    MatDiagonalSet(a, g->work_, INSERT_VALUES);
    return 0;
  }

  solvers::HeatConfig c_;
  Mat lap_ = nullptr, j_ = nullptr, jp_ = nullptr;
  Vec f_ = nullptr, u_ = nullptr, kappa_ = nullptr, lambda_ = nullptr,
      mu_ = nullptr, work_ = nullptr;
};

// Starts PETSc as adgraph does, on its first solve: one 1 × 1 solve per
// rank, whose memory is negligible beside either gradient's.
void start_petsc(int rank) {
  sparse::CsrPattern one;
  one.first_row = rank;
  one.columns = {rank};
  one.row_offsets = {0, 1};
  sparse::SparseMatrix a(one);
  Graph g;
  Session(g).run(
      sparse::solve(a, g.constant(Tensor({2.0})), g.constant(Tensor({1.0}))));
}

}  // namespace

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = Communicator::world();
  CLI::App app{"implicit heat gradient: adgraph against PETSc's TSAdjoint"};
  int n = 256, nt = 28, reps = 5;
  std::string mode = "time", checkpoints = "all";
  app.add_option("--n", n, "grid points per direction");
  app.add_option("--nt", nt, "time steps");
  app.add_option("--reps", reps, "timed rounds");
  app.add_option("--mode", mode)
      ->check(CLI::IsMember({"time", "petsc", "adgraph"}));
  app.add_option(
      "--checkpoints", checkpoints, "adgraph: all or a number of snapshots");
  std::string ksp = "gmres", pc = "jacobi";
  app.add_option("--ksp", ksp, "adgraph's Krylov method (TSAdjoint: gmres)");
  app.add_option("--pc", pc, "adgraph's preconditioner (TSAdjoint: jacobi)");
  CLI11_PARSE(app, argc, argv);

  solvers::HeatConfig c;
  c.nx = c.ny = n;
  c.px = comm->size();
  c.nt = nt;
  c.scheme = solvers::HeatScheme::kBackwardEuler;
  c.dt = 100 * solvers::heat_default_dt(c);
  // TSAdjoint's Krylov solver (adgraph's rows are divided by κ, which
  // leaves the Jacobi-preconditioned operator D⁻¹A, and so GMRES's
  // iterates, as they are); --pc hypre --ksp cg: the demo's solver.
  c.implicit_solver.ksp = ksp;
  c.implicit_solver.pc = pc;
  c.checkpoints = checkpoints == "all"
                      ? CheckpointSchedule::store_all()
                      : CheckpointSchedule::binomial(std::stoi(checkpoints));
  const int rank = comm->rank();
  const solvers::Patch p = solvers::patch_of(c, rank);
  const Tensor u0 = solvers::heat_initial(c, p);
  const Tensor kappa_a = solvers::heat_kappa_true(c, p);
  Tensor kappa_b = kappa_a;
  kappa_b.array() *= 1.01;
  Tensor w(Shape{p.n, p.m}, 1.0);

  Graph g;
  Value kappa = g.placeholder("kappa", {p.n, p.m});
  Value u = solvers::heat_solve(
      g.constant(u0), kappa, g.constant(solvers::heat_source(c, p)), c);
  Value grad = gradient(sum(g.constant(w) * u), kappa);
  Session s(g);
  const double rss0 = peak_rss_mb();
  if (mode == "adgraph") {
    s.run(grad, {{kappa, kappa_a}});
    if (rank == 0)
      std::printf("adgraph checkpoints %s: peak RSS %.1f MB (%.1f MB before)\n",
                  checkpoints.c_str(),
                  peak_rss_mb(),
                  rss0);
    return 0;
  }
  start_petsc(rank);
  PetscGradient petsc(c, solvers::five_point_pattern(c, rank));
  if (mode == "petsc") {
    petsc.gradient(kappa_a, u0, w);
    if (rank == 0)
      std::printf("petsc TSAdjoint: peak RSS %.1f MB (%.1f MB before)\n",
                  peak_rss_mb(),
                  rss0);
    return 0;
  }
  // Both gradients at κ_a agree (the same discrete problem).
  const Tensor mine = s.run(grad, {{kappa, kappa_a}});
  const std::vector<double> theirs = petsc.gradient(kappa_a, u0, w);
  double diff = 0, scale = 0;
  for (int64_t k = 0; k < mine.size(); ++k) {
    diff = std::max(diff, std::fabs(mine[k] - theirs[k]));
    scale = std::max(scale, std::fabs(theirs[k]));
  }
  diff = comm->allreduce_max(diff) / comm->allreduce_max(scale);
  int round = 0;
  auto t = bench::median_times(
      reps,
      {[&] { petsc.gradient(round % 2 ? kappa_a : kappa_b, u0, w); },
       [&] {
         s.run(grad, {{kappa, round++ % 2 ? kappa_a : kappa_b}});
       }});
  if (rank == 0) {
    std::printf(
        "%d^2, %d steps, %d rank(s): TSAdjoint %.1f ms, adgraph %.1f ms "
        "(%.2fx); gradients differ by %.1e (relative)\n",
        n,
        nt,
        comm->size(),
        1e3 * t[0],
        1e3 * t[1],
        t[1] / t[0],
        diff);
  }
  return 0;
}
