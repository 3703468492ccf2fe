#include "src/pb/pb_hypre.h"

#include <HYPRE_struct_ls.h>
#include <mpi.h>

#include <algorithm>
#include <cstdlib>

#include "src/core/bulk_memory.h"
#include "src/core/errors.h"
#include "src/core/foreign_allocations.h"
#include "src/core/process_exit.h"
#include "src/core/stopwatch.h"
#include "src/core/thread_count.h"
#include "src/pb/pb_limits.h"

namespace espgrid::pb {

namespace {

void finalize_mpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  [[maybe_unused]] const ForeignAllocations mpi_runtime;  // Open MPI leaks at its finish (sanitizer builds only)
  MPI_Finalize();
}

/// hypre is built on MPI: start it unless something (the scale-out layer under mpirun) already did.
void ensure_mpi() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  // Outside mpirun, Open MPI's singleton start launches a helper daemon it never needs here
  // (measured 0.7-1.8 s on a loaded 2-core VM, 0.3 s without): ask for the isolated singleton,
  // unless the user chose otherwise.
  setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
  int provided = 0;
  int status = MPI_SUCCESS;
  {
    [[maybe_unused]] const ForeignAllocations mpi_runtime;  // Open MPI keeps some of its start's allocations forever
    status = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  }
  if (status != MPI_SUCCESS) throw Error("hypre needs MPI, and MPI_Init_thread failed");
  std::atexit(finalize_mpi);
  note_exit_handler_needed();
}

void check(HYPRE_Int status, const char* call) {
  if (status == 0) return;
  char text[256] = {};
  HYPRE_DescribeError(status, text);
  HYPRE_ClearAllErrors();
  throw Error(std::string("hypre: ") + call + " failed: " + text);
}

/// Owns the hypre objects of one solve; destroys them in reverse order, never throwing.
struct HypreObjects {
  HYPRE_StructGrid grid = nullptr;
  HYPRE_StructStencil stencil = nullptr;
  HYPRE_StructMatrix matrix = nullptr;
  HYPRE_StructVector b = nullptr, x = nullptr;
  HYPRE_StructSolver pcg = nullptr, pfmg = nullptr;
  ~HypreObjects() {
    if (pfmg) HYPRE_StructPFMGDestroy(pfmg);
    if (pcg) HYPRE_StructPCGDestroy(pcg);
    if (x) HYPRE_StructVectorDestroy(x);
    if (b) HYPRE_StructVectorDestroy(b);
    if (matrix) HYPRE_StructMatrixDestroy(matrix);
    if (stencil) HYPRE_StructStencilDestroy(stencil);
    if (grid) HYPRE_StructGridDestroy(grid);
  }
};

/// The interior planes [first, last] one rank owns: contiguous blocks, balanced to one plane (a
/// rank may own none), and the planes filled or read at a time (staging buffers stay small).
struct RankPlanes {
  long n[3];
  long first, last, slab;
  long nxi() const { return n[0] - 2; }
  long nyi() const { return n[1] - 2; }
  long nzi() const { return n[2] - 2; }
};

RankPlanes rank_planes(const GridSpec& grid, int rank, int ranks) {
  RankPlanes p{};
  for (int d = 0; d < 3; ++d) p.n[d] = static_cast<long>(grid.dims[d]);
  const long nzi_all = p.n[2] - 2;
  p.first = 1 + rank * (nzi_all / ranks) + std::min<long>(rank, nzi_all % ranks);
  p.last = p.first + nzi_all / ranks + (rank < nzi_all % ranks ? 1 : 0) - 1;
  p.slab = std::max(1L, std::min(p.nzi(), (1L << 22) / std::max(1L, p.nxi() * p.nyi())));
  return p;
}

/// The grid of this rank's unknowns (interior nodes, indices 1 .. n − 2 along each axis), the
/// 7-point stencil, the matrix and the vectors, created and initialized.
void create_system(HypreObjects& h, MPI_Comm comm, const RankPlanes& p) {
  HYPRE_Int lower[3] = {1, 1, static_cast<HYPRE_Int>(p.first)};
  HYPRE_Int upper[3] = {static_cast<HYPRE_Int>(p.n[0] - 2), static_cast<HYPRE_Int>(p.n[1] - 2),
                        static_cast<HYPRE_Int>(p.last)};
  check(HYPRE_StructGridCreate(comm, 3, &h.grid), "HYPRE_StructGridCreate");
  if (p.last >= p.first) check(HYPRE_StructGridSetExtents(h.grid, lower, upper), "HYPRE_StructGridSetExtents");
  check(HYPRE_StructGridAssemble(h.grid), "HYPRE_StructGridAssemble");
  // Stencil entries: centre, −x, +x, −y, +y, −z, +z.
  HYPRE_Int offsets[7][3] = {{0, 0, 0}, {-1, 0, 0}, {1, 0, 0}, {0, -1, 0}, {0, 1, 0}, {0, 0, -1}, {0, 0, 1}};
  check(HYPRE_StructStencilCreate(3, 7, &h.stencil), "HYPRE_StructStencilCreate");
  for (HYPRE_Int e = 0; e < 7; ++e)
    check(HYPRE_StructStencilSetElement(h.stencil, e, offsets[e]), "HYPRE_StructStencilSetElement");
  check(HYPRE_StructMatrixCreate(comm, h.grid, h.stencil, &h.matrix), "HYPRE_StructMatrixCreate");
  check(HYPRE_StructMatrixInitialize(h.matrix), "HYPRE_StructMatrixInitialize");
  check(HYPRE_StructVectorCreate(comm, h.grid, &h.b), "HYPRE_StructVectorCreate");
  check(HYPRE_StructVectorInitialize(h.b), "HYPRE_StructVectorInitialize");
  check(HYPRE_StructVectorCreate(comm, h.grid, &h.x), "HYPRE_StructVectorCreate");
  check(HYPRE_StructVectorInitialize(h.x), "HYPRE_StructVectorInitialize");
}

/// The system's planes a rank's share reads: its own and the one below (the faces to it).
PlaneRange planes_read(const RankPlanes& p) {
  if (p.last < p.first) return {0, 0};
  return {p.first - 1, p.last + 1};
}

/// The matrix, right-hand side and a zero start filled from `system` a slab at a time, then
/// assembled.
void fill_system(HypreObjects& h, const PbSystem& system, const RankPlanes& p, int threads) {
  const PlaneRange read = planes_read(p);
  if (read.first < read.end && (read.first < system.planes.first || read.end > system.planes.end))
    throw Error("internal error: this rank's share of the PB system was assembled on other planes");
  const long nxi = p.nxi(), nyi = p.nyi(), nzi = p.nzi();
  HYPRE_Int entries[7] = {0, 1, 2, 3, 4, 5, 6};
  std::vector<double> values, rhs, zero;
  const long sy = p.n[0], sz = p.n[0] * p.n[1];
  for (long k0 = p.first; k0 <= p.last; k0 += p.slab) {
    const long k1 = std::min(p.last, k0 + p.slab - 1);
    const std::size_t count = static_cast<std::size_t>(nxi * nyi * (k1 - k0 + 1));
    values.assign(7 * count, 0.0);
    rhs.assign(count, 0.0);
    zero.assign(count, 0.0);
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long k = k0; k <= k1; ++k)
      for (long j = 1; j <= nyi; ++j)
        for (long i = 1; i <= nxi; ++i) {
          const std::size_t q = static_cast<std::size_t>((i - 1) + nxi * ((j - 1) + nyi * (k - k0)));
          const long idx = i + sy * j + sz * k;
          double* v = &values[7 * q];
          const double w[6] = {system.wx[idx - 1], system.wx[idx],      system.wy[idx - sy],
                               system.wy[idx],     system.wz[idx - sz], system.wz[idx]};
          v[0] = w[0] + w[1] + w[2] + w[3] + w[4] + w[5] + system.c[idx];
          // Couplings to boundary nodes are 0 in the matrix: their (known) values are in rhs.
          v[1] = i > 1 ? -w[0] : 0.0;
          v[2] = i < nxi ? -w[1] : 0.0;
          v[3] = j > 1 ? -w[2] : 0.0;
          v[4] = j < nyi ? -w[3] : 0.0;
          v[5] = k > 1 ? -w[4] : 0.0;
          v[6] = k < nzi ? -w[5] : 0.0;
          rhs[q] = system.rhs[idx];
        }
    HYPRE_Int lo[3] = {1, 1, static_cast<HYPRE_Int>(k0)},
              hi[3] = {static_cast<HYPRE_Int>(nxi), static_cast<HYPRE_Int>(nyi), static_cast<HYPRE_Int>(k1)};
    check(HYPRE_StructMatrixSetBoxValues(h.matrix, lo, hi, 7, entries, values.data()),
          "HYPRE_StructMatrixSetBoxValues");
    check(HYPRE_StructVectorSetBoxValues(h.b, lo, hi, rhs.data()), "HYPRE_StructVectorSetBoxValues");
    check(HYPRE_StructVectorSetBoxValues(h.x, lo, hi, zero.data()), "HYPRE_StructVectorSetBoxValues");
  }
  values = {};
  check(HYPRE_StructMatrixAssemble(h.matrix), "HYPRE_StructMatrixAssemble");
  check(HYPRE_StructVectorAssemble(h.b), "HYPRE_StructVectorAssemble");
  check(HYPRE_StructVectorAssemble(h.x), "HYPRE_StructVectorAssemble");
}

/// PCG preconditioned by one PFMG V-cycle, set up on the assembled system.
void set_up_solver(HypreObjects& h, MPI_Comm comm, const GridSpec& grid, double tolerance, int max_iterations) {
  check(HYPRE_StructPCGCreate(comm, &h.pcg), "HYPRE_StructPCGCreate");
  HYPRE_StructPCGSetTol(h.pcg, tolerance);
  HYPRE_StructPCGSetMaxIter(h.pcg, max_iterations);
  HYPRE_StructPCGSetTwoNorm(h.pcg, 1);  // stop on ‖r‖₂/‖b‖₂, the residual espgrid reports
  HYPRE_StructPCGSetRelChange(h.pcg, 0);
  HYPRE_StructPCGSetLogging(h.pcg, 1);
  check(HYPRE_StructPFMGCreate(comm, &h.pfmg), "HYPRE_StructPFMGCreate");
  HYPRE_StructPFMGSetMaxIter(h.pfmg, 1);  // one V-cycle per application: a fixed, symmetric preconditioner
  HYPRE_StructPFMGSetTol(h.pfmg, 0.0);
  HYPRE_StructPFMGSetZeroGuess(h.pfmg);
  HYPRE_StructPFMGSetRAPType(h.pfmg, 0);    // Galerkin: robust to the 2 : 78.5 dielectric jump
  HYPRE_StructPFMGSetRelaxType(h.pfmg, 2);  // symmetric red-black Gauss-Seidel (CG needs symmetry)
  HYPRE_StructPFMGSetNumPreRelax(h.pfmg, 1);
  HYPRE_StructPFMGSetNumPostRelax(h.pfmg, 1);
  HYPRE_Real dxyz[3] = {grid.spacing[0], grid.spacing[1], grid.spacing[2]};
  HYPRE_StructPFMGSetDxyz(h.pfmg, dxyz);
  check(HYPRE_StructPCGSetPrecond(h.pcg, HYPRE_StructPFMGSolve, HYPRE_StructPFMGSetup, h.pfmg),
        "HYPRE_StructPCGSetPrecond");
  check(HYPRE_StructPCGSetup(h.pcg, h.matrix, h.b, h.x), "HYPRE_StructPCGSetup");
}

/// A solve across ranks needs MPI started by mpirun (the scale-out layer starts it there).
void require_mpi_running() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) throw Error("hypre across MPI ranks: MPI is not running (start espgrid with mpirun)");
}

/// Every rank's `values` summed in place (collective), in pieces whose counts fit MPI's int.
void add_across(std::vector<double>& values, MPI_Comm comm) {
  constexpr std::size_t kPiece = std::size_t{1} << 26;
  for (std::size_t at = 0; at < values.size(); at += kPiece)
    MPI_Allreduce(MPI_IN_PLACE, values.data() + at, static_cast<int>(std::min(values.size() - at, kPiece)), MPI_DOUBLE,
                  MPI_SUM, comm);
}

/// The solution on this rank's planes into `u` (the whole grid's shape, 0 elsewhere: resident on the
/// planes `kept` only).
void own_solution(const HypreObjects& h, const RankPlanes& p, int threads, PlaneRange kept, std::vector<double>& u) {
  const long nxi = p.nxi(), nyi = p.nyi();
  const long sy = p.n[0], sz = p.n[0] * p.n[1];
  assign_zeros_resident(u, static_cast<std::size_t>(sz * p.n[2]), static_cast<std::size_t>(sz * kept.first),
                        static_cast<std::size_t>(sz * kept.end));
  for (long k0 = p.first; k0 <= p.last; k0 += p.slab) {
    const long k1 = std::min(p.last, k0 + p.slab - 1);
    std::vector<double> out(static_cast<std::size_t>(nxi * nyi * (k1 - k0 + 1)));
    HYPRE_Int lo[3] = {1, 1, static_cast<HYPRE_Int>(k0)},
              hi[3] = {static_cast<HYPRE_Int>(nxi), static_cast<HYPRE_Int>(nyi), static_cast<HYPRE_Int>(k1)};
    check(HYPRE_StructVectorGetBoxValues(h.x, lo, hi, out.data()), "HYPRE_StructVectorGetBoxValues");
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long k = k0; k <= k1; ++k)
      for (long j = 1; j <= nyi; ++j)
        for (long i = 1; i <= nxi; ++i)
          u[static_cast<std::size_t>(i + sy * j + sz * k)] =
              out[static_cast<std::size_t>((i - 1) + nxi * ((j - 1) + nyi * (k - k0)))];
  }
}

/// Every rank's planes summed into every rank's `u`: each entry has one owner, so the sum is exact.
void gather_solution_everywhere(const HypreObjects& h, const RankPlanes& p, MPI_Comm comm, int ranks, int threads,
                                std::vector<double>& u) {
  own_solution(h, p, threads, {0, p.n[2]}, u);
  if (ranks > 1) add_across(u, comm);
}

/// Planes [first, end) of `u`, to or from `peer`, in pieces of whole planes whose counts fit MPI's int.
void move_planes(std::vector<double>& u, long first, long end, long plane, int peer, bool send, MPI_Comm comm) {
  const long per_piece = std::max(1L, (1L << 27) / plane);
  if (plane >= (1L << 31)) throw Error("hypre: a z-plane of the PB grid is too large for one MPI message");
  for (long k = first; k < end; k += per_piece) {
    const int count = static_cast<int>(std::min(per_piece, end - k) * plane);
    double* at = u.data() + k * plane;
    if (send)
      MPI_Send(at, count, MPI_DOUBLE, peer, 0, comm);
    else
      MPI_Recv(at, count, MPI_DOUBLE, peer, 0, comm, MPI_STATUS_IGNORE);
  }
}

/// This rank's planes into `u` with the plane beyond each end from its neighbours (what its residual
/// reads); rank 0 then receives every rank's planes, the others keep theirs (resident alone). Needs
/// every rank to own a plane.
void gather_solution_to_rank_zero(const HypreObjects& h, const RankPlanes& p, MPI_Comm comm, int rank, int ranks,
                                  int threads, std::vector<double>& u) {
  const long plane = p.n[0] * p.n[1];
  own_solution(h, p, threads, rank == 0 ? PlaneRange{0, p.n[2]} : PlaneRange{p.first - 1, p.last + 2}, u);
  if (rank > 0)  // the plane below, from the rank below; this rank's first, to it
    MPI_Sendrecv(u.data() + p.first * plane, static_cast<int>(plane), MPI_DOUBLE, rank - 1, 1,
                 u.data() + (p.first - 1) * plane, static_cast<int>(plane), MPI_DOUBLE, rank - 1, 1, comm,
                 MPI_STATUS_IGNORE);
  if (rank + 1 < ranks)
    MPI_Sendrecv(u.data() + p.last * plane, static_cast<int>(plane), MPI_DOUBLE, rank + 1, 1,
                 u.data() + (p.last + 1) * plane, static_cast<int>(plane), MPI_DOUBLE, rank + 1, 1, comm,
                 MPI_STATUS_IGNORE);
}

/// Rank 0 receives every other rank's planes of `u` (after the residual: a halo plane is overwritten
/// with the same values).
void collect_on_rank_zero(const GridSpec& grid, const RankPlanes& p, MPI_Comm comm, int rank, int ranks,
                          std::vector<double>& u) {
  const long plane = p.n[0] * p.n[1];
  if (rank != 0) {
    move_planes(u, p.first, p.last + 1, plane, 0, true, comm);
    return;
  }
  for (int r = 1; r < ranks; ++r) {
    const RankPlanes theirs = rank_planes(grid, r, ranks);
    move_planes(u, theirs.first, theirs.last + 1, plane, r, false, comm);
  }
}

SolveReport solve_with_hypre(const PbSystem& system, std::vector<double>& u, double tolerance, int max_iterations,
                             int threads, bool across_ranks, HypreSolution where) {
  threads = threads_to_use(threads);
  if (across_ranks) require_mpi_running();
  ensure_mpi();
  reserve_for_hypre(system.grid);  // an allocation that fails inside hypre ends the process (MPI_Abort)
  for (int d = 0; d < 3; ++d)
    if (system.grid.dims[d] < 3 || system.grid.dims[d] > (1L << 30))
      throw Error("hypre: the PB grid needs 3 or more points along every axis");
  const MPI_Comm comm = across_ranks ? MPI_COMM_WORLD : MPI_COMM_SELF;
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  SolveReport report;
  report.method = "hypre PCG + PFMG (Galerkin coarse operators, symmetric red-black Gauss-Seidel)";
  report.device = "CPU, " + std::to_string(ranks) + (ranks == 1 ? " MPI rank" : " MPI ranks") +
                  " (hypre; the grid set-up on " + std::to_string(threads) + " threads)";
  const Stopwatch setup;
  HypreObjects h;
  const RankPlanes planes = rank_planes(system.grid, rank, ranks);
  create_system(h, comm, planes);
  fill_system(h, system, planes, threads);
  set_up_solver(h, comm, system.grid, tolerance, max_iterations);
  report.setup_seconds = setup.seconds();
  const Stopwatch solve;
  const HYPRE_Int status = HYPRE_StructPCGSolve(h.pcg, h.matrix, h.b, h.x);
  if (status != 0 && !HYPRE_CheckError(status, HYPRE_ERROR_CONV)) check(status, "HYPRE_StructPCGSolve");
  HYPRE_ClearAllErrors();  // not converging is reported below, with the residual
  HYPRE_Int iterations = 0;
  HYPRE_Real own_residual = 0;
  HYPRE_StructPCGGetNumIterations(h.pcg, &iterations);
  HYPRE_StructPCGGetFinalRelativeResidualNorm(h.pcg, &own_residual);
  report.iterations = static_cast<int>(iterations);
  report.solve_seconds = solve.seconds();
  // Rank 0 alone gets the whole solution where asked and every rank owns a plane (then every rank has
  // neighbours on both sides of its planes, or the grid's faces).
  const bool to_rank_zero = where == HypreSolution::RankZero && ranks > 1 && planes.nzi() >= ranks;
  if (to_rank_zero)
    gather_solution_to_rank_zero(h, planes, comm, rank, ranks, threads, u);
  else
    gather_solution_everywhere(h, planes, comm, ranks, threads, u);
  if (ranks > 1) {  // each rank's rows, summed: a rank may hold only its share of the system
    ResidualSums sums = residual_sums(system, u, {planes.first, planes.last + 1}, threads);
    double both[2] = {sums.rr, sums.bb};
    MPI_Allreduce(MPI_IN_PLACE, both, 2, MPI_DOUBLE, MPI_SUM, comm);
    report.relative_residual = relative_residual(ResidualSums{both[0], both[1]});
    if (to_rank_zero) collect_on_rank_zero(system.grid, planes, comm, rank, ranks, u);
    report.solution_whole = !to_rank_zero || rank == 0;
  } else {
    report.relative_residual = relative_residual(system, u, threads);
  }
  // hypre's own (recursively updated) residual decides, as it decided when to stop; the one
  // reported is recomputed from the solution and differs from it by rounding only.
  report.converged = own_residual <= tolerance;
  return report;
}

PlaneRange rank_planes_read(const GridSpec& grid) {
  require_mpi_running();
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  return planes_read(rank_planes(grid, rank, ranks));
}

FaceSumShare face_sums_across_ranks() {
  require_mpi_running();
  FaceSumShare share;
  MPI_Comm_rank(MPI_COMM_WORLD, &share.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &share.ranks);
  share.add_across_ranks = [](std::vector<double>& values) { add_across(values, MPI_COMM_WORLD); };
  return share;
}

/// Registers the solver when the program loads (this object file is linked into it whole).
const bool registered = [] {
  register_hypre_solver(&solve_with_hypre, &rank_planes_read, &face_sums_across_ranks);
  return true;
}();

}  // namespace

}  // namespace espgrid::pb
