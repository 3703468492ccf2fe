// The Poisson–Boltzmann coefficient maps on the GPU: APBS's `mol`, `smol` and `spl2` dielectric
// and ion accessibility (src/pb_numerics/pb_geometry.h has the definitions and the per-node functions,
// shared with the host builder in src/pb_surface/pb_coefficients.cpp). Built with --fmad=false (see
// CMakeLists.txt): every distance is summed as the host sums it, so the maps equal the host's.
//
//   mol/smol: fill solvent → mark atom + probe spheres solute (one block per atom) → SAS points:
//             count per atom, offsets, write (one thread per atom × reference point) → mark probe
//             spheres at them solvent (one block per point) → smol: 9-point harmonic mean per face;
//             ion accessibility: fill 1 → mark atom + ion spheres 0
//   spl2:     per node, the atoms whose box covers its row, in ascending order (a product: the
//             order is the host's), then ε = ε_solute + (ε_solvent − ε_solute)·product
#include <cuda_runtime.h>

#include <chrono>
#include <string>
#include <vector>

#include "kernels/cuda_runtime_support.h"
#include "kernels/pb/pb_device.cuh"
#include "src/pb/pb_cuda_driver.h"
#include "src/pb_numerics/pb_geometry.h"

namespace espgrid::cuda {
namespace {

constexpr int kThreads = 256;

struct Grid {
  long n[3];
  double origin[3];
  double h[3];
};

unsigned blocks_for(long count) { return static_cast<unsigned>((count + kThreads - 1) / kThreads); }

__global__ void fill_kernel(double* a, long count, double value) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) a[i] = value;
}

/// Marks `value` within radius (radius[s] + add, or add alone without radii) of each centre s on
/// one array whose nodes are shifted by `shift` spacings. One block per centre; centres without
/// a radius (≤ kNoRadius, when radii are given) are skipped, as on the host.
__global__ void mark_spheres_kernel(Grid g, const double* x, const double* y, const double* z, const double* radius,
                                    double add, double sx, double sy, double sz, double value, double* array) {
  const long s = blockIdx.x;
  double R = add;
  if (radius) {
    if (radius[s] <= pb::kNoRadius) return;
    R = radius[s] + add;
  }
  const double p[3] = {x[s] - (g.origin[0] + sx * g.h[0]), y[s] - (g.origin[1] + sy * g.h[1]),
                       z[s] - (g.origin[2] + sz * g.h[2])};
  long lo[3], hi[3];
  for (int d = 0; d < 3; ++d) pb::sphere_index_range(p[d], R, g.h[d], g.n[d], lo[d], hi[d]);
  const long wx = hi[0] - lo[0] + 1, wy = hi[1] - lo[1] + 1, wz = hi[2] - lo[2] + 1;
  if (wx <= 0 || wy <= 0 || wz <= 0) return;
  const long total = wx * wy * wz;
  const double r2 = R * R;
  for (long t = threadIdx.x; t < total; t += blockDim.x) {
    const long i = lo[0] + t % wx, j = lo[1] + (t / wx) % wy, k = lo[2] + t / (wx * wy);
    if (pb::in_sphere(p, g.h, i, j, k, r2)) array[i + g.n[0] * (j + g.n[1] * k)] = value;
  }
}

/// Pass 1 (write == false): counts each atom's accessible SAS points into count[a]. Pass 2: writes
/// them at offset[a] + (a running index). One thread per (atom, reference point).
__global__ void sas_kernel(long atoms, long reference_points, const double* x, const double* y, const double* z,
                           const double* radius, const double* rx, const double* ry, const double* rz,
                           const long long* nb_start, const int* nb, double probe, bool write, int* count,
                           const long long* offset, double* ox, double* oy, double* oz) {
  const long t = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= atoms * reference_points) return;
  const long a = t / reference_points, q = t - a * reference_points;
  const double ra = radius[a];
  if (ra <= pb::kNoRadius) return;
  const double rad = ra + probe;
  const double px = rad * rx[q] + x[a], py = rad * ry[q] + y[a], pz = rad * rz[q] + z[a];
  if (!pb::sas_point_open(px, py, pz, x, y, z, radius, nb, static_cast<long>(nb_start[a]),
                          static_cast<long>(nb_start[a + 1]), probe))
    return;
  const int slot = atomicAdd(&count[a], 1);
  if (!write) return;
  const long long at = offset[a] + slot;
  ox[at] = px;
  oy[at] = py;
  oz[at] = pz;
}

__global__ void smooth_kernel(Grid g, const double* x, const double* y, const double* z, double* ex, double* ey,
                              double* ez) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long plane = g.n[0] * g.n[1];
  if (idx >= plane * g.n[2]) return;
  const long k = idx / plane, j = (idx - k * plane) / g.n[0], i = idx - k * plane - j * g.n[0];
  const long sx = 1, sy = g.n[0], sz = plane;
  ex[idx] = pb::smooth_face(x, y, z, 0, i, j, k, g.n, sx, sy, sz);
  ey[idx] = pb::smooth_face(y, x, z, 1, i, j, k, g.n, sx, sy, sz);
  ez[idx] = pb::smooth_face(z, x, y, 2, i, j, k, g.n, sx, sy, sz);
}

/// `spl2`: the products at each node over the atoms of its row (ascending), then the maps.
__global__ void spline_kernel(Grid g, const double* x, const double* y, const double* z, const double* radius,
                              const long long* row_start, const int* row_atoms, const long* box_lo, const long* box_hi,
                              double ion, double w, double mask, double eps_p, double eps_w, double* acc, double* ex,
                              double* ey, double* ez) {
  const long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long plane = g.n[0] * g.n[1];
  if (idx >= plane * g.n[2]) return;
  const long k = idx / plane, j = (idx - k * plane) / g.n[0], i = idx - k * plane - j * g.n[0];
  const long row = j + g.n[1] * k;
  double a = 1.0, fx = 1.0, fy = 1.0, fz = 1.0;
  for (long long s = row_start[row]; s < row_start[row + 1]; ++s) {
    const int at = row_atoms[s];
    if (i < box_lo[at] || i > box_hi[at]) continue;
    const double p[3] = {x[at] - g.origin[0], y[at] - g.origin[1], z[at] - g.origin[2]};
    pb::spline_factors(p, g.h, i, j, k, radius[at], ion, w, a, fx, fy, fz);
  }
  const double de = eps_w - eps_p;
  acc[idx] = a * mask;
  ex[idx] = de * fx + eps_p;
  ey[idx] = de * fy + eps_p;
  ez[idx] = de * fz + eps_p;
}

template <class T>
DeviceBuffer<T> upload(const T* host, std::size_t count, const char* name, cudaStream_t stream) {
  DeviceBuffer<T> d(count, name);
  if (count) ESPGRID_CUDA_CHECK(cudaMemcpyAsync(d.get(), host, count * sizeof(T), cudaMemcpyHostToDevice, stream));
  return d;
}

}  // namespace

// Longer than 80 lines because it is one sequence of launches over every surface definition
// (spline, mol with its SAS carving, smol, the ion accessibility) sharing the uploaded atoms and the
// output maps; its CPU twin is pb_coefficients.cpp, one function a definition.
DeviceSurface build_surface_on_device(const PbSurfaceInput& in, cudaStream_t st) {
  DeviceSurface out;
  Grid g;
  for (int d = 0; d < 3; ++d) {
    g.n[d] = in.n[d];
    g.origin[d] = in.origin[d];
    g.h[d] = in.spacing[d];
  }
  const long points = in.n[0] * in.n[1] * in.n[2];
  const std::size_t natoms = static_cast<std::size_t>(in.atoms);
  DeviceBuffer<double> x = upload(in.x, natoms, "PB atom x", st), y = upload(in.y, natoms, "PB atom y", st),
                       z = upload(in.z, natoms, "PB atom z", st), r = upload(in.radius, natoms, "PB atom radii", st);
  out.eps[0] = DeviceBuffer<double>(static_cast<std::size_t>(points), "PB eps_x");
  out.eps[1] = DeviceBuffer<double>(static_cast<std::size_t>(points), "PB eps_y");
  out.eps[2] = DeviceBuffer<double>(static_cast<std::size_t>(points), "PB eps_z");
  out.accessibility = DeviceBuffer<double>(static_cast<std::size_t>(points), "PB ion accessibility");
  DeviceBuffer<double>* eps = out.eps;
  DeviceBuffer<double>& acc = out.accessibility;
  Event start, stop;
  start.record(st);
  const unsigned atom_blocks = static_cast<unsigned>(in.atoms);
  if (in.surface == 2) {
    const std::size_t rows = static_cast<std::size_t>(in.n[1] * in.n[2]);
    DeviceBuffer<long long> row_start = upload(in.row_start, rows + 1, "PB spline rows", st);
    DeviceBuffer<int> row_atoms =
        upload(in.row_atoms, static_cast<std::size_t>(in.row_start[rows]), "PB spline row atoms", st);
    DeviceBuffer<long> lo = upload(in.box_x_lo, natoms, "PB spline boxes", st),
                       hi = upload(in.box_x_hi, natoms, "PB spline boxes", st);
    spline_kernel<<<blocks_for(points), kThreads, 0, st>>>(
        g, x.get(), y.get(), z.get(), r.get(), row_start.get(), row_atoms.get(), lo.get(), hi.get(),
        in.salt ? in.ion_radius : 0.0, in.spline_window, in.salt ? 1.0 : 0.0, in.solute_dielectric,
        in.solvent_dielectric, acc.get(), eps[0].get(), eps[1].get(), eps[2].get());
    ESPGRID_CUDA_CHECK_LAUNCH();
    ESPGRID_CUDA_CHECK(cudaStreamSynchronize(st));  // the uploads above are freed at the end of this scope
  } else {
    const double shifts[3][3] = {{0.5, 0, 0}, {0, 0.5, 0}, {0, 0, 0.5}};
    for (int d = 0; d < 3; ++d) {
      fill_kernel<<<blocks_for(points), kThreads, 0, st>>>(eps[d].get(), points, in.solvent_dielectric);
      ESPGRID_CUDA_CHECK_LAUNCH();
    }
    if (in.atoms > 0)
      for (int d = 0; d < 3; ++d) {
        mark_spheres_kernel<<<atom_blocks, 128, 0, st>>>(g, x.get(), y.get(), z.get(), r.get(), in.probe_radius,
                                                         shifts[d][0], shifts[d][1], shifts[d][2], in.solute_dielectric,
                                                         eps[d].get());
        ESPGRID_CUDA_CHECK_LAUNCH();
      }
    if (in.probe_radius > pb::kNoRadius && in.atoms > 0 && in.reference_points > 0) {
      const std::size_t nref = static_cast<std::size_t>(in.reference_points);
      DeviceBuffer<double> rx = upload(in.reference_x, nref, "PB reference sphere", st),
                           ry = upload(in.reference_y, nref, "PB reference sphere", st),
                           rz = upload(in.reference_z, nref, "PB reference sphere", st);
      DeviceBuffer<long long> nb_start = upload(in.neighbour_start, natoms + 1, "PB SAS neighbour offsets", st);
      DeviceBuffer<int> nb =
          upload(in.neighbours, static_cast<std::size_t>(in.neighbour_start[natoms]), "PB SAS neighbours", st);
      DeviceBuffer<int> count(natoms, "PB SAS counts");
      ESPGRID_CUDA_CHECK(cudaMemsetAsync(count.get(), 0, natoms * sizeof(int), st));
      const long pairs = in.atoms * in.reference_points;
      sas_kernel<<<blocks_for(pairs), kThreads, 0, st>>>(
          in.atoms, in.reference_points, x.get(), y.get(), z.get(), r.get(), rx.get(), ry.get(), rz.get(),
          nb_start.get(), nb.get(), in.probe_radius, false, count.get(), nullptr, nullptr, nullptr, nullptr);
      ESPGRID_CUDA_CHECK_LAUNCH();
      std::vector<int> counts(natoms);
      ESPGRID_CUDA_CHECK(cudaMemcpyAsync(counts.data(), count.get(), natoms * sizeof(int), cudaMemcpyDeviceToHost, st));
      ESPGRID_CUDA_CHECK(cudaStreamSynchronize(st));
      std::vector<long long> offsets(natoms + 1, 0);
      for (std::size_t a = 0; a < natoms; ++a) offsets[a + 1] = offsets[a] + counts[a];
      const std::size_t total = static_cast<std::size_t>(offsets[natoms]);
      out.sas_points = total;
      if (total > 0) {
        DeviceBuffer<long long> offset = upload(offsets.data(), natoms + 1, "PB SAS offsets", st);
        DeviceBuffer<double> sx(total, "PB SAS points x"), sy(total, "PB SAS points y"), sz(total, "PB SAS points z");
        ESPGRID_CUDA_CHECK(cudaMemsetAsync(count.get(), 0, natoms * sizeof(int), st));
        sas_kernel<<<blocks_for(pairs), kThreads, 0, st>>>(
            in.atoms, in.reference_points, x.get(), y.get(), z.get(), r.get(), rx.get(), ry.get(), rz.get(),
            nb_start.get(), nb.get(), in.probe_radius, true, count.get(), offset.get(), sx.get(), sy.get(), sz.get());
        ESPGRID_CUDA_CHECK_LAUNCH();
        for (int d = 0; d < 3; ++d) {
          mark_spheres_kernel<<<static_cast<unsigned>(total), 128, 0, st>>>(
              g, sx.get(), sy.get(), sz.get(), nullptr, in.probe_radius, shifts[d][0], shifts[d][1], shifts[d][2],
              in.solvent_dielectric, eps[d].get());
          ESPGRID_CUDA_CHECK_LAUNCH();
        }
        ESPGRID_CUDA_CHECK(cudaStreamSynchronize(st));
      }
    }
    if (in.surface == 1) {  // smol: the 9-point harmonic mean of the mol values
      DeviceBuffer<double> mol[3] = {DeviceBuffer<double>(static_cast<std::size_t>(points), "PB mol eps_x"),
                                     DeviceBuffer<double>(static_cast<std::size_t>(points), "PB mol eps_y"),
                                     DeviceBuffer<double>(static_cast<std::size_t>(points), "PB mol eps_z")};
      for (int d = 0; d < 3; ++d)
        ESPGRID_CUDA_CHECK(cudaMemcpyAsync(mol[d].get(), eps[d].get(),
                                           static_cast<std::size_t>(points) * sizeof(double), cudaMemcpyDeviceToDevice,
                                           st));
      smooth_kernel<<<blocks_for(points), kThreads, 0, st>>>(g, mol[0].get(), mol[1].get(), mol[2].get(), eps[0].get(),
                                                             eps[1].get(), eps[2].get());
      ESPGRID_CUDA_CHECK_LAUNCH();
      ESPGRID_CUDA_CHECK(cudaStreamSynchronize(st));
    }
    fill_kernel<<<blocks_for(points), kThreads, 0, st>>>(acc.get(), points, in.salt ? 1.0 : 0.0);
    ESPGRID_CUDA_CHECK_LAUNCH();
    if (in.salt && in.atoms > 0) {
      mark_spheres_kernel<<<atom_blocks, 128, 0, st>>>(g, x.get(), y.get(), z.get(), r.get(), in.ion_radius, 0, 0, 0,
                                                       0.0, acc.get());
      ESPGRID_CUDA_CHECK_LAUNCH();
    }
  }
  stop.record(st);
  stop.synchronize();
  out.kernel_ms = Event::elapsed_ms(start, stop);
  return out;
}

void build_pb_surface(const PbSurfaceInput& in, PbSurfaceOutput& out) {
  const auto wall0 = std::chrono::steady_clock::now();
  const DeviceGuard guard(in.device);
  Stream stream;
  const cudaStream_t st = stream.get();
  DeviceSurface maps = build_surface_on_device(in, st);
  out.sas_points = maps.sas_points;
  out.kernel_seconds = maps.kernel_ms * 1e-3;
  const std::size_t bytes = static_cast<std::size_t>(in.n[0] * in.n[1] * in.n[2]) * sizeof(double);
  double* host[4] = {out.eps_x, out.eps_y, out.eps_z, out.accessibility};
  const DeviceBuffer<double>* dev[4] = {&maps.eps[0], &maps.eps[1], &maps.eps[2], &maps.accessibility};
  for (int m = 0; m < 4; ++m)
    ESPGRID_CUDA_CHECK(cudaMemcpyAsync(host[m], dev[m]->get(), bytes, cudaMemcpyDeviceToHost, st));
  stream.synchronize();
  out.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
}

}  // namespace espgrid::cuda
