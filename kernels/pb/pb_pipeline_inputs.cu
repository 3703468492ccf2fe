// The device PB pipeline's inputs, built on the device from the atoms (kernels/pb/pb_pipeline.cuh):
// atom bins (cub's stable radix sort, so bins list their atoms in ascending order, as the host's
// cell lists do), the SAS neighbour lists (count, scan, fill, sort closest first), the mol/smol
// surface as bytes carved by every open SAS point without storing the points, the node codes, and
// the spread charges gathered per node. The per-item code is src/pb_numerics/pb_pipeline_math.h's; this
// file is built with --fmad=false (CMakeLists.txt), so the surface and charges are the host's bits.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <limits>
#include <string>

#include "kernels/cuda_runtime_support.h"
#include "kernels/pb/pb_pipeline.cuh"

namespace espgrid::cuda::pipeline {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(long count) { return static_cast<unsigned>((count + kThreads - 1) / kThreads); }

template <class T>
Tracked<T> upload(Ledger& ledger, const T* host, std::size_t count, const char* name, cudaStream_t stream) {
  Tracked<T> d(ledger, count, name);
  if (count) ESPGRID_CUDA_CHECK(cudaMemcpyAsync(d.get(), host, count * sizeof(T), cudaMemcpyHostToDevice, stream));
  return d;
}

template <class Geometry>
__global__ void key_kernel(Geometry g, pb::AtomArrays at, unsigned* keys, int* order) {
  const long a = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (a >= at.count) return;
  keys[a] = static_cast<unsigned>(g.key(at.x[a], at.y[a], at.z[a]));
  order[a] = static_cast<int>(a);
}

/// start[c] = the first sorted position whose key is ≥ c (c = 0 .. bins).
__global__ void bin_start_kernel(const unsigned* keys, long n, long bins, unsigned* start) {
  const long c = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c > bins) return;
  long lo = 0, hi = n;
  while (lo < hi) {
    const long mid = lo + (hi - lo) / 2;
    if (keys[mid] < static_cast<unsigned>(c))
      lo = mid + 1;
    else
      hi = mid;
  }
  start[c] = static_cast<unsigned>(lo);
}

/// Sorts the atoms by g.key (stable: ascending atom index within a key) into bins.
template <class Geometry>
Bins sort_into_bins(Ledger& ledger, const Geometry& g, long bin_count, const pb::AtomArrays& at, cudaStream_t st) {
  if (bin_count >= static_cast<long>(std::numeric_limits<unsigned>::max()))
    throw Error("the PB pipeline's atom bins (" + std::to_string(bin_count) + ") overflow 32-bit keys");
  const int n = static_cast<int>(at.count);
  Tracked<unsigned> keys(ledger, at.count, "PB bin keys"), sorted_keys(ledger, at.count, "PB sorted bin keys");
  Tracked<int> order(ledger, at.count, "PB bin order");
  Bins bins;
  bins.atoms = Tracked<int>(ledger, at.count, "PB binned atoms");
  key_kernel<<<blocks_for(at.count), kThreads, 0, st>>>(g, at, keys.get(), order.get());
  ESPGRID_CUDA_CHECK_LAUNCH();
  int bits = 1;
  while (bits < 32 && (static_cast<unsigned long long>(1) << bits) <= static_cast<unsigned long long>(bin_count))
    ++bits;
  std::size_t temp_bytes = 0;
  ESPGRID_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys.get(), sorted_keys.get(), order.get(),
                                                     bins.atoms.get(), n, 0, bits, st));
  Tracked<unsigned char> temp(ledger, temp_bytes > 0 ? temp_bytes : 1, "PB bin sort scratch");
  ESPGRID_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.get(), temp_bytes, keys.get(), sorted_keys.get(), order.get(),
                                                     bins.atoms.get(), n, 0, bits, st));
  bins.start = Tracked<unsigned>(ledger, static_cast<std::size_t>(bin_count) + 1, "PB bin starts");
  bin_start_kernel<<<blocks_for(bin_count + 1), kThreads, 0, st>>>(sorted_keys.get(), at.count, bin_count,
                                                                   bins.start.get());
  ESPGRID_CUDA_CHECK_LAUNCH();
  ESPGRID_CUDA_CHECK(cudaStreamSynchronize(st));  // before the scratch arrays are freed
  return bins;
}

// The SAS neighbour lists, one warp an atom: its lanes share the atom's cells (a thread an atom left
// most of the device idle on small structures and sorted ~100 neighbours alone: 2.1 ms of a 3,341-atom
// frame's 7.7 ms of kernels, H200, 2026-11-28), then rank the neighbours closest first in shared
// memory. The lists are pb::sas_neighbours', entry for entry: (distance², index) is a total order,
// so the order the lanes find them in does not matter.
constexpr int kListWarps = kThreads / 32;
constexpr int kListShared = 256;  ///< neighbours ranked in shared memory; longer lists: one lane sorts

/// count[a] = atom a's SAS neighbours (0 where it cannot reach this slab's planes); count[atoms] = 0.
__global__ void neighbour_count_kernel(pb::AtomCells cells, pb::AtomArrays at, double probe, pb::SurfaceBytes window,
                                       long long* count) {
  const int lane = threadIdx.x % 32;
  const long a = static_cast<long>(blockIdx.x) * kListWarps + threadIdx.x / 32;
  if (a > at.count) return;  // the whole warp: a is the same for its lanes
  if (a == at.count || !pb::reaches_window(window, at.z[a], at.radius[a], probe)) {
    if (lane == 0) count[a] = 0;  // the extra last entry is 0: the scan's total lands there
    return;
  }
  const pb::SasSearch search = pb::sas_search(cells, at, probe, a);
  long long c = 0;
  for (long t = lane; t < search.cells(); t += 32) {
    const long cell = search.cell(cells, t);
    for (unsigned m = cells.start[cell]; m < cells.start[cell + 1]; ++m) {
      const int b = cells.atoms[m];
      if (b != a && search.blocks(at, probe, b)) ++c;
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) c += __shfl_down_sync(0xffffffffu, c, offset);
  if (lane == 0) count[a] = c;
}

__global__ void neighbour_fill_kernel(pb::AtomCells cells, pb::AtomArrays at, double probe, pb::SurfaceBytes window,
                                      const long long* start, int* list) {
  __shared__ int found_index[kListWarps][kListShared];
  __shared__ double found_distance[kListWarps][kListShared];  ///< Å², from atom a
  __shared__ unsigned found_count[kListWarps];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const long a = static_cast<long>(blockIdx.x) * kListWarps + warp;
  if (a >= at.count || !pb::reaches_window(window, at.z[a], at.radius[a], probe)) return;  // the whole warp
  const long count = static_cast<long>(start[a + 1] - start[a]);
  int* out = list + start[a];
  const bool in_shared = count <= kListShared;
  if (lane == 0) found_count[warp] = 0;
  __syncwarp();
  const pb::SasSearch search = pb::sas_search(cells, at, probe, a);
  for (long t = lane; t < search.cells(); t += 32) {
    const long cell = search.cell(cells, t);
    for (unsigned m = cells.start[cell]; m < cells.start[cell + 1]; ++m) {
      const int b = cells.atoms[m];
      if (b == a || !search.blocks(at, probe, b)) continue;
      const unsigned slot = atomicAdd(&found_count[warp], 1u);
      if (!in_shared) {
        out[slot] = b;
        continue;
      }
      const double dx = at.x[b] - search.ax, dy = at.y[b] - search.ay, dz = at.z[b] - search.az;
      found_index[warp][slot] = b;
      found_distance[warp][slot] = dx * dx + dy * dy + dz * dz;  // pb::sort_closest_first's dist2
    }
  }
  __syncwarp();
  if (!in_shared) {  // rare (a long list): the thread-an-atom sort
    if (lane == 0) pb::sort_closest_first(out, count, at, a);
    return;
  }
  for (long e = lane; e < count; e += 32) {  // each entry's rank is its place in the list
    const int b = found_index[warp][e];
    const double d = found_distance[warp][e];
    long rank = 0;
    for (long f = 0; f < count; ++f) rank += pb::closer_first(found_distance[warp][f], found_index[warp][f], d, b);
    out[rank] = b;
  }
}

/// Marks `value` within radius (radius[s] + add) of each atom s with a radius, one block per atom.
__global__ void mark_atoms_kernel(pb::SurfaceBytes g, pb::AtomArrays at, double add, int array, unsigned char value) {
  const long s = blockIdx.x;
  if (at.radius[s] <= pb::kNoRadius) return;
  const double R = at.radius[s] + add;
  const double shift[3] = {array < 3 ? pb::face_shift(array, 0) : 0.0, array < 3 ? pb::face_shift(array, 1) : 0.0,
                           array < 3 ? pb::face_shift(array, 2) : 0.0};
  unsigned char* out = array < 3 ? g.solute[array] : g.accessible;
  const double p[3] = {at.x[s] - (g.origin[0] + shift[0] * g.h[0]), at.y[s] - (g.origin[1] + shift[1] * g.h[1]),
                       at.z[s] - (g.origin[2] + shift[2] * g.h[2])};
  long lo[3], hi[3];
  for (int d = 0; d < 3; ++d) pb::sphere_index_range(p[d], R, g.h[d], g.n[d], lo[d], hi[d]);
  g.clip_planes(lo[2], hi[2]);
  const long wx = hi[0] - lo[0] + 1, wy = hi[1] - lo[1] + 1, wz = hi[2] - lo[2] + 1;
  if (wx <= 0 || wy <= 0 || wz <= 0) return;
  const double r2 = R * R;
  for (long t = threadIdx.x; t < wx * wy * wz; t += blockDim.x) {
    const long i = lo[0] + t % wx, j = lo[1] + (t / wx) % wy, k = lo[2] + t / (wx * wy);
    if (pb::in_sphere(p, g.h, i, j, k, r2)) out[g.stored(i, j, k)] = value;
  }
}

/// One thread per (atom, reference point): the point's test and, when open, its probe sphere carved.
/// Four blocks an SM (64 registers a thread, a few spilled): the kernel waits on its neighbour lists'
/// loads, and the occupancy hides them better than the registers it gives up (the capsid's surface
/// 281 -> 247 ms on an H200, benchmarks/NOTES.md).
__global__ void __launch_bounds__(kThreads, 4)
    carve_kernel(pb::SurfaceBytes g, pb::AtomArrays at, const long long* nb_start, const int* nb, double probe,
                 const double* rx, const double* ry, const double* rz, long points, CountedHeights counted,
                 unsigned long long* open_points) {
  const long t = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= at.count * points) return;
  const long a = t / points, q = t - a * points;
  if (!pb::reaches_window(g, at.z[a], at.radius[a], probe)) return;  // its list is empty: its points carve nothing here
  if (pb::carve_sas_point(g, at, nb, static_cast<long>(nb_start[a]), static_cast<long>(nb_start[a + 1]), probe, a,
                          rx[q], ry[q], rz[q]) &&
      at.z[a] >= counted.lo && at.z[a] < counted.hi)
    atomicAdd(open_points, 1ull);
}

/// The codes of planes first .. first + planes − 1 (plane `first` at codes[0]).
__global__ void code_kernel(pb::SurfaceBytes g, bool smooth, bool salt, long first, long planes, std::uint32_t* codes) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long plane = g.n[0] * g.n[1];
  if (idx >= plane * planes) return;
  const long k = idx / plane, j = (idx - k * plane) / g.n[0], i = idx - k * plane - j * g.n[0];
  codes[idx] = pb::node_code(g, smooth, salt, i, j, first + k);
}

/// Bounded to four blocks an SM (64 registers, a few bytes spilled): at its unbounded 80 registers it
/// ran three, 33.9 against 26.7 ms on the capsid (benchmarks/results/pb-charge-gather-2026-11-29/).
__global__ void __launch_bounds__(kThreads, 4)
    charge_kernel(pb::ChargeBins bins, pb::AtomArrays at, long first, long planes, double* out) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long plane = bins.n[0] * bins.n[1];
  if (idx >= plane * planes) return;
  const long k = idx / plane, j = (idx - k * plane) / bins.n[0], i = idx - k * plane - j * bins.n[0];
  out[idx] = pb::gathered_charge(bins, at, i, j, first + k);
}

}  // namespace

DeviceAtoms upload_atoms(Ledger& ledger, const pb::AtomArrays& host, cudaStream_t st) {
  DeviceAtoms d;
  d.count = host.count;
  const std::size_t n = static_cast<std::size_t>(host.count);
  d.x = upload(ledger, host.x, n, "PB atom x", st);
  d.y = upload(ledger, host.y, n, "PB atom y", st);
  d.z = upload(ledger, host.z, n, "PB atom z", st);
  d.radius = upload(ledger, host.radius, n, "PB atom radii", st);
  d.charge = upload(ledger, host.charge, n, "PB atom charges", st);
  return d;
}

Bins bin_atoms(Ledger& ledger, const pb::AtomCells& cells, const pb::AtomArrays& atoms, cudaStream_t st) {
  return sort_into_bins(ledger, cells, cells.n[0] * cells.n[1] * cells.n[2], atoms, st);
}

Bins bin_atoms(Ledger& ledger, const pb::ChargeBins& bins, const pb::AtomArrays& atoms, cudaStream_t st) {
  return sort_into_bins(ledger, bins, bins.bin_count(), atoms, st);
}

Neighbours sas_neighbours(Ledger& ledger, const pb::AtomCells& cells, const pb::AtomArrays& at, double probe,
                          const pb::SurfaceBytes& window, cudaStream_t st) {
  Neighbours nb;
  const std::size_t entries = static_cast<std::size_t>(at.count) + 1;
  Tracked<long long> count(ledger, entries, "PB SAS neighbour counts");
  nb.start = Tracked<long long>(ledger, entries, "PB SAS neighbour offsets");
  const unsigned warp_blocks = static_cast<unsigned>((at.count + 1 + kListWarps - 1) / kListWarps);
  neighbour_count_kernel<<<warp_blocks, kThreads, 0, st>>>(cells, at, probe, window, count.get());
  ESPGRID_CUDA_CHECK_LAUNCH();
  std::size_t temp_bytes = 0;
  ESPGRID_CUDA_CHECK(
      cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, count.get(), nb.start.get(), static_cast<int>(entries), st));
  Tracked<unsigned char> temp(ledger, temp_bytes > 0 ? temp_bytes : 1, "PB SAS neighbour scan scratch");
  ESPGRID_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp.get(), temp_bytes, count.get(), nb.start.get(),
                                                   static_cast<int>(entries), st));
  long long total = 0;
  ESPGRID_CUDA_CHECK(cudaMemcpyAsync(&total, nb.start.get() + at.count, sizeof(long long), cudaMemcpyDeviceToHost, st));
  ESPGRID_CUDA_CHECK(cudaStreamSynchronize(st));
  nb.pairs = static_cast<std::size_t>(total);
  nb.list = Tracked<int>(ledger, nb.pairs > 0 ? nb.pairs : 1, "PB SAS neighbour lists");
  neighbour_fill_kernel<<<warp_blocks, kThreads, 0, st>>>(cells, at, probe, window, nb.start.get(), nb.list.get());
  ESPGRID_CUDA_CHECK_LAUNCH();
  ESPGRID_CUDA_CHECK(cudaStreamSynchronize(st));  // before the counts and the scratch are freed
  return nb;
}

SurfaceBytes build_surface_bytes(Ledger& ledger, const PbPipelineInput& in, const pb::AtomArrays& at,
                                 const Neighbours& neighbours, const pb::SurfaceBytes& window, CountedHeights counted,
                                 unsigned long long* open_points, cudaStream_t st) {
  SurfaceBytes s;
  s.view = window;
  const std::size_t bytes = static_cast<std::size_t>(window.n[0] * window.n[1] * window.k_count);
  const char* names[3] = {"PB solute flags (x faces)", "PB solute flags (y faces)", "PB solute flags (z faces)"};
  pb::SurfaceBytes& g = s.view;
  for (int d = 0; d < 3; ++d) {
    s.solute[d] = Tracked<unsigned char>(ledger, bytes, names[d]);
    g.solute[d] = s.solute[d].get();
    ESPGRID_CUDA_CHECK(cudaMemsetAsync(g.solute[d], 0, bytes, st));  // solvent everywhere
  }
  s.accessible = Tracked<unsigned char>(ledger, bytes, "PB ion accessibility flags");
  g.accessible = s.accessible.get();
  ESPGRID_CUDA_CHECK(cudaMemsetAsync(g.accessible, in.salt ? 1 : 0, bytes, st));
  ESPGRID_CUDA_CHECK(cudaMemsetAsync(open_points, 0, sizeof(unsigned long long), st));
  if (at.count == 0) return s;
  const unsigned atom_blocks = static_cast<unsigned>(at.count);
  for (int d = 0; d < 3; ++d) {  // solute within atom + probe radius (APBS fillcoCoefMolDielNoSmooth)
    mark_atoms_kernel<<<atom_blocks, 128, 0, st>>>(g, at, in.probe_radius, d, 1);
    ESPGRID_CUDA_CHECK_LAUNCH();
  }
  if (in.probe_radius > pb::kNoRadius && in.reference_points > 0) {  // solvent within a probe of open SAS points
    const std::size_t nref = static_cast<std::size_t>(in.reference_points);
    s.reference[0] = upload(ledger, in.reference_x, nref, "PB reference sphere", st);
    s.reference[1] = upload(ledger, in.reference_y, nref, "PB reference sphere", st);
    s.reference[2] = upload(ledger, in.reference_z, nref, "PB reference sphere", st);
    carve_kernel<<<blocks_for(at.count * in.reference_points), kThreads, 0, st>>>(
        g, at, neighbours.start.get(), neighbours.list.get(), in.probe_radius, s.reference[0].get(),
        s.reference[1].get(), s.reference[2].get(), in.reference_points, counted, open_points);
    ESPGRID_CUDA_CHECK_LAUNCH();
  }
  if (in.salt) {  // no ions within atom + ion radius (APBS fillcoCoefMolIon)
    mark_atoms_kernel<<<atom_blocks, 128, 0, st>>>(g, at, in.ion_radius, 3, 0);
    ESPGRID_CUDA_CHECK_LAUNCH();
  }
  return s;
}

void write_codes(const pb::SurfaceBytes& bytes, bool smooth, bool salt, long first, long planes, std::uint32_t* codes,
                 cudaStream_t st) {
  const long points = bytes.n[0] * bytes.n[1] * planes;
  code_kernel<<<blocks_for(points), kThreads, 0, st>>>(bytes, smooth, salt, first, planes, codes);
  ESPGRID_CUDA_CHECK_LAUNCH();
}

void gather_charges(const pb::ChargeBins& bins, const pb::AtomArrays& atoms, long first, long planes, double* out,
                    cudaStream_t st) {
  const long points = bins.n[0] * bins.n[1] * planes;
  charge_kernel<<<blocks_for(points), kThreads, 0, st>>>(bins, atoms, first, planes, out);
  ESPGRID_CUDA_CHECK_LAUNCH();
}

}  // namespace espgrid::cuda::pipeline
