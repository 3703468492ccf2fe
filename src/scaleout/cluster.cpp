#include "src/scaleout/cluster.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <exception>

#include "src/core/process_exit.h"

#if ESPGRID_HAVE_MPI
#include <mpi.h>
#endif

namespace espgrid::scaleout {

PlaneSpan rank_planes(std::int64_t nz, int rank, int ranks) {
  if (ranks < 1 || rank < 0 || rank >= ranks || nz < 0) throw Error("rank_planes: bad rank or plane count");
  const std::int64_t base = nz / ranks, extra = nz % ranks;
  const std::int64_t begin = rank * base + std::min<std::int64_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

bool mpi_built() noexcept { return ESPGRID_HAVE_MPI != 0; }

namespace {

bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(name)) return true;
  return false;
}

#if ESPGRID_HAVE_MPI
void finalize_mpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

/// 256 MiB messages at most: large single messages are where MPI implementations differ.
constexpr std::int64_t kMessageBytes = std::int64_t{256} << 20;
#endif

}  // namespace

Cluster::Cluster() {
#if ESPGRID_HAVE_MPI
  if (!launched_by_mpi()) return;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      throw Error("MPI_Init_thread failed");
    std::atexit(finalize_mpi);
  }
  note_exit_handler_needed();  // MPI_Finalize must run, also when MPI was started by someone else
  mpi_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local_rank_);
  MPI_Comm_size(node, &local_size_);
  MPI_Comm_free(&node);
#else
  (void)launched_by_mpi;
#endif
}

Cluster& Cluster::world() {
  static Cluster cluster;
  return cluster;
}

std::string Cluster::host() const {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

void Cluster::agree(const std::string& phase, const std::function<void()>& body) {
  std::exception_ptr error;
  std::string message;
  try {
    body();
  } catch (const std::exception& e) {
    error = std::current_exception();
    message = e.what();
  } catch (...) {
    error = std::current_exception();
    message = "unknown error";
  }
  if (!distributed()) {
    if (error) std::rethrow_exception(error);
    return;
  }
#if ESPGRID_HAVE_MPI
  int failed = error ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (!failed) return;
  const std::vector<std::string> messages = gather_text(error ? message : std::string());
  const std::vector<double> flags = gather_values({error ? 1.0 : 0.0});
  if (!is_root())
    throw PeerFailure("rank " + std::to_string(rank_) + ": stopped because " +
                      (error ? "it failed: " + message : std::string("another rank failed")));
  bool all_same = true;
  std::string report;
  for (int r = 0; r < size_; ++r) {
    if (flags[static_cast<std::size_t>(r)] == 0.0) {
      all_same = false;
      continue;
    }
    all_same = all_same && messages[static_cast<std::size_t>(r)] == message;
    report += (report.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + " of " + std::to_string(size_) +
              " failed while " + phase + ": " + messages[static_cast<std::size_t>(r)];
  }
  if (error && all_same) std::rethrow_exception(error);  // the same error everywhere: say it once
  throw Error(report);
#else
  (void)phase;
  if (error) std::rethrow_exception(error);
#endif
}

void Cluster::gather_planes(const float* local, const PlaneSpan& span, std::int64_t plane_points, float* root_map,
                            std::int64_t nz) const {
  if (!distributed()) return;
#if ESPGRID_HAVE_MPI
  if (plane_points <= 0 || plane_points > INT_MAX)
    throw Error("gather: a plane of " + std::to_string(plane_points) + " points is too large for one MPI datatype");
  MPI_Datatype plane;
  MPI_Type_contiguous(static_cast<int>(plane_points), MPI_FLOAT, &plane);
  MPI_Type_commit(&plane);
  const std::int64_t plane_bytes = plane_points * static_cast<std::int64_t>(sizeof(float));
  const std::int64_t per_message = std::max<std::int64_t>(1, kMessageBytes / plane_bytes);
  const long long mine[2] = {static_cast<long long>(span.begin), static_cast<long long>(span.end)};
  std::vector<long long> spans(is_root() ? 2 * static_cast<std::size_t>(size_) : 0);
  MPI_Gather(mine, 2, MPI_LONG_LONG, spans.data(), 2, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  if (is_root()) {
    for (int r = 1; r < size_; ++r) {
      const PlaneSpan s{spans[2 * static_cast<std::size_t>(r)], spans[2 * static_cast<std::size_t>(r) + 1]};
      if (s.begin < 0 || s.end < s.begin || (nz >= 0 && s.end > nz))
        throw Error("gather: rank " + std::to_string(r) + " sent planes outside the map");
      for (std::int64_t k = s.begin; k < s.end; k += per_message) {
        const int count = static_cast<int>(std::min(per_message, s.end - k));
        MPI_Recv(root_map + k * plane_points, count, plane, r, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }
    }
  } else {
    for (std::int64_t k = 0; k < span.count(); k += per_message) {
      const int count = static_cast<int>(std::min(per_message, span.count() - k));
      MPI_Send(local + k * plane_points, count, plane, 0, 0, MPI_COMM_WORLD);
    }
  }
  MPI_Type_free(&plane);
#else
  (void)local, (void)span, (void)plane_points, (void)root_map, (void)nz;
#endif
}

std::vector<std::string> Cluster::gather_text(const std::string& text) const {
  if (!distributed()) return {text};
#if ESPGRID_HAVE_MPI
  int length = static_cast<int>(std::min<std::size_t>(text.size(), 1 << 20));
  std::vector<int> lengths(is_root() ? static_cast<std::size_t>(size_) : 0);
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> offsets(lengths.size());
  int total = 0;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    offsets[r] = total;
    total += lengths[r];
  }
  std::string all(static_cast<std::size_t>(total), '\0');
  MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (std::size_t r = 0; r < lengths.size(); ++r)
    out.push_back(all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
  return out;
#else
  return {text};
#endif
}

std::vector<double> Cluster::gather_values(const std::vector<double>& values) const {
  if (!distributed()) return values;
#if ESPGRID_HAVE_MPI
  const int count = static_cast<int>(values.size());
  std::vector<double> out(is_root() ? values.size() * static_cast<std::size_t>(size_) : 0);
  MPI_Gather(values.data(), count, MPI_DOUBLE, out.data(), count, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return out;
#else
  return values;
#endif
}

double Cluster::broadcast_value(double value) const {
#if ESPGRID_HAVE_MPI
  if (distributed()) MPI_Bcast(&value, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
#endif
  return value;
}

void Cluster::barrier() const {
#if ESPGRID_HAVE_MPI
  if (distributed()) MPI_Barrier(MPI_COMM_WORLD);
#endif
}

bool Cluster::broadcast_flag(bool value) const {
  if (!distributed()) return value;
#if ESPGRID_HAVE_MPI
  int flag = value ? 1 : 0;
  MPI_Bcast(&flag, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return flag != 0;
#else
  return value;
#endif
}

}  // namespace espgrid::scaleout
