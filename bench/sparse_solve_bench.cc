// sparse_solve against the same PETSc calls written by hand, and the cost
// of its gradient, on two matrices of the patch grid (solvers/
// patch_operators.h) with N × N points on P × 1 patches:
//   poisson  the conservative operator, κ = 1 + x² + y²; CG + GAMG
//            (symmetric: the adjoint solves with A)
//   heat_be  I − dt·diag(κ)Δ_h with 100 times the explicit dt;
//            GMRES + Jacobi (the adjoint: KSPSolveTranspose)
// hand: one KSPSolve on a matrix assembled once with the same values,
// options and zero guess; forward: Session::run of the sparse_solve node
// (its values unchanged, so nothing is assembled or set up again);
// gradient: the values' and right-hand side's cotangents of L = Σ w ⊙ x
// (forward solve, transpose solve, outer product on the pattern).
//
//   mpirun -n 1 bench/sparse_solve_bench 256 1024
//   mpirun -n 2 bench/sparse_solve_bench 256 1024
#include <petscksp.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "adgraph.h"
#include "bench/bench_timing.h"
#include "solvers/patch_operators.h"

using namespace adgraph;

namespace {

struct Problem {
  const char* name;
  sparse::SolverOptions options;
  bool heat;
};

// KSPSolve on a matrix assembled by hand from the pattern and values.
class HandSolve {
 public:
  HandSolve(const sparse::CsrPattern& p,
            int64_t global,
            const Tensor& values,
            const sparse::SolverOptions& o) {
    const PetscInt n = static_cast<PetscInt>(p.local_rows());
    MatCreate(MPI_COMM_WORLD, &a_);
    MatSetSizes(a_, n, n, global, global);
    MatSetType(a_, MATAIJ);
    std::vector<PetscInt> off(p.row_offsets.begin(), p.row_offsets.end());
    std::vector<PetscInt> col(p.columns.begin(), p.columns.end());
    MatSeqAIJSetPreallocationCSR(a_, off.data(), col.data(), values.data());
    MatMPIAIJSetPreallocationCSR(a_, off.data(), col.data(), values.data());
    KSPCreate(MPI_COMM_WORLD, &ksp_);
    KSPSetType(ksp_, o.ksp == "cg" ? KSPCG : KSPGMRES);
    PC pc;
    KSPGetPC(ksp_, &pc);
    PCSetType(pc, o.pc == "gamg" ? PCGAMG : PCJACOBI);
    KSPSetTolerances(ksp_, o.rtol, o.atol, PETSC_DEFAULT, o.max_it);
    KSPSetOperators(ksp_, a_, a_);
    KSPSetUp(ksp_);
    VecCreateMPI(MPI_COMM_WORLD, n, global, &b_);
    VecDuplicate(b_, &x_);
  }
  ~HandSolve() {
    KSPDestroy(&ksp_);
    MatDestroy(&a_);
    VecDestroy(&b_);
    VecDestroy(&x_);
  }
  void solve(const Tensor& b) {
    double* data = nullptr;
    VecGetArray(b_, &data);
    std::copy(b.data(), b.data() + b.size(), data);
    VecRestoreArray(b_, &data);
    KSPSolve(ksp_, b_, x_);
  }
  PetscInt iterations() const {
    PetscInt its = 0;
    KSPGetIterationNumber(ksp_, &its);
    return its;
  }

 private:
  Mat a_ = nullptr;
  KSP ksp_ = nullptr;
  Vec b_ = nullptr, x_ = nullptr;
};

void run(int n, const Problem& pr, Communicator& comm) {
  solvers::HeatConfig c;
  c.nx = c.ny = n;
  c.px = comm.size();
  const int rank = comm.rank();
  const solvers::Patch p = solvers::patch_of(c, rank);
  Graph g;
  Tensor kappa_t = solvers::heat_kappa_true(c, p);
  Value kappa = g.constant(kappa_t);
  Value values_node =
      pr.heat ? solvers::heat_matrix_values(
                    c, rank, kappa, -100 * solvers::heat_default_dt(c))
              : solvers::conservative_values(c, rank, kappa);
  Session make(g);
  const Tensor values_t = make.run(values_node);
  sparse::SparseMatrix a(solvers::five_point_pattern(c, rank));
  Graph h;
  Value values = h.placeholder("values", values_t.shape());
  Value b = h.placeholder("b", {p.n, p.m});
  Value x = sparse::solve(a, values, b, pr.options);
  Value w = h.constant(Tensor(Shape{p.n, p.m}, 1.0));
  auto grads = gradients(sum(w * x), {values, b});
  Session s(h);
  const Tensor b_t = solvers::heat_source(c, p);
  const FeedMap feeds = {{values, values_t}, {b, b_t}};
  s.run(x, feeds);  // starts PETSc
  HandSolve hand(a.pattern(), int64_t{n} * n, values_t, pr.options);
  const int reps = n >= 1024 ? 5 : 15;
  auto t = bench::median_times(reps,
                               {[&] { hand.solve(b_t); },
                                [&] { s.run(x, feeds); },
                                [&] { s.run(grads, feeds); }});
  if (rank == 0) {
    std::printf(
        "%-8s %5d^2 %d rank(s)  hand %8.2f ms (%3d its)  forward %8.2f ms"
        " (%.3fx hand)  gradient %8.2f ms (%.2fx forward)\n",
        pr.name,
        n,
        comm.size(),
        1e3 * t[0],
        static_cast<int>(hand.iterations()),
        1e3 * t[1],
        t[1] / t[0],
        1e3 * t[2],
        t[2] / t[1]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = Communicator::world();
  std::vector<int> sizes;
  for (int k = 1; k < argc; ++k) sizes.push_back(std::atoi(argv[k]));
  if (sizes.empty()) sizes = {256, 1024};
  sparse::SolverOptions cg;
  cg.ksp = "cg";
  cg.pc = "gamg";
  cg.symmetric = true;
  sparse::SolverOptions gmres;
  const Problem problems[] = {{"poisson", cg, false}, {"heat_be", gmres, true}};
  for (int n : sizes)
    for (const Problem& pr : problems) run(n, pr, *comm);
  return 0;
}
