// Meshes: contouring by surface nets, cavity walls, windowed-sinc smoothing, normals.
// Functions longer than 80 lines because contour and smooth_windowed_sinc are each one
// numerical algorithm as its paper states it (one pass over cells, one filter recurrence);
// split, their loop-carried state would travel through long argument lists.
#include "src/view/mesh.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "src/core/errors.h"

namespace espgrid::surface {
namespace {

constexpr double kPi = 3.14159265358979323846;

/// Splits quad (a, b, c, d), in loop order, into two triangles along its shorter diagonal
/// (better-shaped triangles than a fixed split).
void add_quad(TriangleMesh& m, std::uint32_t a, std::uint32_t b, std::uint32_t c, std::uint32_t d) {
  const auto dist2 = [&](std::uint32_t p, std::uint32_t q) {
    double s = 0;
    for (int t = 0; t < 3; ++t) {
      const double e = double(m.positions[3 * p + t]) - double(m.positions[3 * q + t]);
      s += e * e;
    }
    return s;
  };
  if (dist2(a, c) <= dist2(b, d)) {
    m.triangles.insert(m.triangles.end(), {a, b, c, a, c, d});
  } else {
    m.triangles.insert(m.triangles.end(), {a, b, d, b, c, d});
  }
}

struct DisjointSets {
  std::vector<std::uint32_t> parent;
  explicit DisjointSets(std::size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0u); }
  std::uint32_t find(std::uint32_t x) {
    while (parent[x] != x) {
      parent[x] = parent[parent[x]];
      x = parent[x];
    }
    return x;
  }
  void join(std::uint32_t a, std::uint32_t b) {
    a = find(a);
    b = find(b);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);
  }
};

}  // namespace

TriangleMesh contour(const ScalarField& field, double level, bool inside_above, int stride) {
  if (stride < 1) throw Error("internal error: contour stride must be at least 1");
  const std::int64_t s = stride;
  std::array<std::int64_t, 3> n{};
  std::array<double, 3> h{};
  for (int a = 0; a < 3; ++a) {
    n[a] = field.dims[a] >= 1 ? (field.dims[a] - 1) / s + 1 : 0;
    h[a] = field.spacing[a] * static_cast<double>(s);
  }
  TriangleMesh mesh;
  if (n[0] < 2 || n[1] < 2 || n[2] < 2) return mesh;
  const std::int64_t nx = field.dims[0], ny = field.dims[1];
  const auto value = [&](std::int64_t i, std::int64_t j, std::int64_t k) {
    return static_cast<double>(field.values[i * s + nx * (j * s + ny * (k * s))]);
  };
  const auto inside = [&](double v) { return inside_above ? v > level : v < level; };
  const std::int64_t cx = n[0] - 1, cy = n[1] - 1;  // cells per row, rows per layer
  std::vector<std::int64_t> previous(static_cast<std::size_t>(cx * cy), -1), current(previous.size(), -1);
  const auto cell = [&](const std::vector<std::int64_t>& layer, std::int64_t i, std::int64_t j) {
    return layer[static_cast<std::size_t>(i + cx * j)];
  };

  for (std::int64_t k = 0; k + 1 < n[2]; ++k) {
    // The vertices of cell layer k (between point planes k and k + 1).
    for (std::int64_t j = 0; j < cy; ++j) {
      for (std::int64_t i = 0; i < cx; ++i) {
        double v[8];
        unsigned mask = 0;
        for (unsigned c = 0; c < 8; ++c) {
          v[c] = value(i + (c & 1), j + ((c >> 1) & 1), k + ((c >> 2) & 1));
          if (inside(v[c])) mask |= 1u << c;
        }
        std::int64_t& slot = current[static_cast<std::size_t>(i + cx * j)];
        if (mask == 0 || mask == 255) {
          slot = -1;
          continue;
        }
        double sum[3] = {0, 0, 0};
        int crossings = 0;
        for (unsigned c = 0; c < 8; ++c) {
          for (unsigned axis = 0; axis < 3; ++axis) {
            const unsigned bit = 1u << axis;
            if (c & bit) continue;
            const unsigned d = c | bit;
            if (((mask >> c) & 1) == ((mask >> d) & 1)) continue;
            const double t = (level - v[c]) / (v[d] - v[c]);
            for (unsigned a = 0; a < 3; ++a) {
              const double corner = static_cast<double>((c >> a) & 1);
              sum[a] += a == axis ? t : corner;
            }
            ++crossings;
          }
        }
        const std::int64_t index[3] = {i, j, k};
        slot = static_cast<std::int64_t>(mesh.vertex_count());
        for (int a = 0; a < 3; ++a)
          mesh.positions.push_back(
              static_cast<float>(field.origin[a] + h[a] * (static_cast<double>(index[a]) + sum[a] / crossings)));
      }
    }
    // Edges along z from point plane k to k + 1: the four cells around them are in layer k.
    for (std::int64_t j = 1; j < cy; ++j) {
      for (std::int64_t i = 1; i < cx; ++i) {
        const bool a = inside(value(i, j, k)), b = inside(value(i, j, k + 1));
        if (a == b) continue;
        // Loop in x, then y: its normal is +z, outwards when the inside is at the lower end.
        const auto p = static_cast<std::uint32_t>(cell(current, i - 1, j - 1)),
                   q = static_cast<std::uint32_t>(cell(current, i, j - 1)),
                   r = static_cast<std::uint32_t>(cell(current, i, j)),
                   t = static_cast<std::uint32_t>(cell(current, i - 1, j));
        if (a)
          add_quad(mesh, p, q, r, t);
        else
          add_quad(mesh, t, r, q, p);
      }
    }
    // Edges along x and y in point plane k: the cells around them are in layers k - 1 and k.
    if (k >= 1) {
      for (std::int64_t j = 0; j < n[1]; ++j) {
        for (std::int64_t i = 0; i < n[0]; ++i) {
          const bool a = inside(value(i, j, k));
          if (i + 1 < n[0] && j >= 1 && j < cy && a != inside(value(i + 1, j, k))) {
            // Loop in y, then z: normal +x.
            const auto p = static_cast<std::uint32_t>(cell(previous, i, j - 1)),
                       q = static_cast<std::uint32_t>(cell(previous, i, j)),
                       r = static_cast<std::uint32_t>(cell(current, i, j)),
                       t = static_cast<std::uint32_t>(cell(current, i, j - 1));
            if (a)
              add_quad(mesh, p, q, r, t);
            else
              add_quad(mesh, t, r, q, p);
          }
          if (j + 1 < n[1] && i >= 1 && i < cx && a != inside(value(i, j + 1, k))) {
            // Loop in z, then x: normal +y.
            const auto p = static_cast<std::uint32_t>(cell(previous, i - 1, j)),
                       q = static_cast<std::uint32_t>(cell(current, i - 1, j)),
                       r = static_cast<std::uint32_t>(cell(current, i, j)),
                       t = static_cast<std::uint32_t>(cell(previous, i, j));
            if (a)
              add_quad(mesh, p, q, r, t);
            else
              add_quad(mesh, t, r, q, p);
          }
        }
      }
    }
    std::swap(previous, current);
  }
  if (mesh.vertex_count() > 0xFFFFFFF0u) throw Error("the surface has more than 4 billion vertices");
  return mesh;
}

TriangleMesh outer_components(const TriangleMesh& mesh) {
  const std::size_t nv = mesh.vertex_count(), nt = mesh.triangle_count();
  if (nt == 0) return mesh;
  DisjointSets sets(nv);
  for (std::size_t t = 0; t < nt; ++t) {
    sets.join(mesh.triangles[3 * t], mesh.triangles[3 * t + 1]);
    sets.join(mesh.triangles[3 * t], mesh.triangles[3 * t + 2]);
  }
  // Each piece's signed volume (the divergence theorem: the sum of the tetrahedra from the
  // origin to its triangles), relative to its first vertex to keep the sum well conditioned.
  std::vector<double> volume(nv, 0.0);
  for (std::size_t t = 0; t < nt; ++t) {
    const std::uint32_t root = sets.find(mesh.triangles[3 * t]);
    const float* o = &mesh.positions[3 * root];
    double p[3][3];
    for (int c = 0; c < 3; ++c)
      for (int a = 0; a < 3; ++a)
        p[c][a] = double(mesh.positions[3 * mesh.triangles[3 * t + static_cast<std::size_t>(c)] +
                                        static_cast<std::uint32_t>(a)]) -
                  o[a];
    volume[root] +=
        (p[0][0] * (p[1][1] * p[2][2] - p[1][2] * p[2][1]) - p[0][1] * (p[1][0] * p[2][2] - p[1][2] * p[2][0]) +
         p[0][2] * (p[1][0] * p[2][1] - p[1][1] * p[2][0])) /
        6.0;
  }
  TriangleMesh out;
  std::vector<std::uint32_t> renumber(nv, 0xFFFFFFFFu);
  for (std::size_t t = 0; t < nt; ++t) {
    if (!(volume[sets.find(mesh.triangles[3 * t])] > 0)) continue;
    for (int c = 0; c < 3; ++c) {
      const std::uint32_t v = mesh.triangles[3 * t + static_cast<std::size_t>(c)];
      if (renumber[v] == 0xFFFFFFFFu) {
        renumber[v] = static_cast<std::uint32_t>(out.vertex_count());
        out.positions.insert(out.positions.end(), mesh.positions.begin() + 3 * v, mesh.positions.begin() + 3 * v + 3);
        if (!mesh.normals.empty())
          out.normals.insert(out.normals.end(), mesh.normals.begin() + 3 * v, mesh.normals.begin() + 3 * v + 3);
      }
      out.triangles.push_back(renumber[v]);
    }
  }
  return out;
}

void smooth_windowed_sinc(TriangleMesh& mesh, int iterations, double pass_band) {
  const std::size_t nv = mesh.vertex_count();
  if (iterations <= 0 || nv == 0) return;
  if (!(pass_band > 0 && pass_band < 2)) throw Error("internal error: smoothing pass band must be in (0, 2)");
  // Neighbours of each vertex along the triangles' edges, each once (CSR).
  std::vector<std::uint64_t> edges;
  edges.reserve(mesh.triangles.size() * 2);
  for (std::size_t t = 0; t < mesh.triangle_count(); ++t) {
    for (int c = 0; c < 3; ++c) {
      const std::uint64_t a = mesh.triangles[3 * t + c], b = mesh.triangles[3 * t + (c + 1) % 3];
      edges.push_back(a << 32 | b);
      edges.push_back(b << 32 | a);
    }
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  std::vector<std::size_t> first(nv + 1, 0);
  std::vector<std::uint32_t> neighbour(edges.size());
  for (std::size_t e = 0; e < edges.size(); ++e) {
    ++first[(edges[e] >> 32) + 1];
    neighbour[e] = static_cast<std::uint32_t>(edges[e] & 0xFFFFFFFFu);
  }
  for (std::size_t v = 0; v < nv; ++v) first[v + 1] += first[v];

  // The filter f(k) = Σ c_i T_i(1 − k/2) on the spectrum k ∈ [0, 2] of the Laplacian: a
  // Hamming-windowed Chebyshev series of the ideal low pass at k_pb, its cut-off offset by σ
  // so that f(k_pb) = 1 (Taubin's choice, and VTK's).
  const int n = iterations;
  const double theta = std::acos(1.0 - 0.5 * pass_band);
  std::vector<double> w(static_cast<std::size_t>(n) + 1), c(w.size());
  for (int i = 0; i <= n; ++i) w[static_cast<std::size_t>(i)] = 0.54 + 0.46 * std::cos(i * kPi / (n + 1));
  double sigma = 0;
  const auto coefficients = [&](double offset) {
    c[0] = w[0] * (theta + offset) / kPi;
    for (int i = 1; i <= n; ++i)
      c[static_cast<std::size_t>(i)] =
          2.0 * w[static_cast<std::size_t>(i)] * std::sin(i * (theta + offset)) / (i * kPi);
  };
  if (n > 1) {
    for (int step = 0; step < 100; ++step) {
      coefficients(sigma);
      double f = c[0], df = w[0] / kPi;
      for (int i = 1; i <= n; ++i) {
        const auto u = static_cast<std::size_t>(i);
        f += c[u] * std::cos(i * theta);
        df += 2.0 * w[u] * std::cos(i * (theta + sigma)) / kPi * std::cos(i * theta);
      }
      if (std::fabs(f - 1.0) < 1e-9 || df == 0) break;
      sigma -= (f - 1.0) / df;
    }
  }
  coefficients(sigma);

  // T_0 = x, T_1 = M x, T_{i+1} = 2 M T_i − T_{i−1}, with M x = (x + mean of the neighbours)/2.
  std::vector<double> t0(3 * nv), t1(3 * nv), t2(3 * nv), result(3 * nv);
  for (std::size_t i = 0; i < 3 * nv; ++i) t0[i] = mesh.positions[i];
  const auto apply_m = [&](const std::vector<double>& x, std::size_t v, double out[3]) {
    const std::size_t begin = first[v], end = first[v + 1];
    double mean[3] = {0, 0, 0};
    for (std::size_t e = begin; e < end; ++e)
      for (int a = 0; a < 3; ++a) mean[a] += x[3 * neighbour[e] + static_cast<std::size_t>(a)];
    const double count = static_cast<double>(end - begin);
    for (int a = 0; a < 3; ++a) {
      const double xa = x[3 * v + static_cast<std::size_t>(a)];
      out[a] = count > 0 ? 0.5 * xa + 0.5 * mean[a] / count : xa;
    }
  };
  const auto nvs = static_cast<std::int64_t>(nv);
#pragma omp parallel for schedule(static)
  for (std::int64_t sv = 0; sv < nvs; ++sv) {
    const auto v = static_cast<std::size_t>(sv);
    double m[3];
    apply_m(t0, v, m);
    for (std::size_t a = 0; a < 3; ++a) {
      t1[3 * v + a] = m[a];
      result[3 * v + a] = c[0] * t0[3 * v + a] + c[1] * m[a];
    }
  }
  for (int i = 2; i <= n; ++i) {
    const double ci = c[static_cast<std::size_t>(i)];
#pragma omp parallel for schedule(static)
    for (std::int64_t sv = 0; sv < nvs; ++sv) {
      const auto v = static_cast<std::size_t>(sv);
      double m[3];
      apply_m(t1, v, m);
      for (std::size_t a = 0; a < 3; ++a) {
        t2[3 * v + a] = 2.0 * m[a] - t0[3 * v + a];
        result[3 * v + a] += ci * t2[3 * v + a];
      }
    }
    std::swap(t0, t1);
    std::swap(t1, t2);
  }
  for (std::size_t i = 0; i < 3 * nv; ++i) mesh.positions[i] = static_cast<float>(result[i]);
}

void compute_normals(TriangleMesh& mesh) {
  const std::size_t nv = mesh.vertex_count();
  std::vector<double> sum(3 * nv, 0.0);
  for (std::size_t t = 0; t < mesh.triangle_count(); ++t) {
    const std::uint32_t* v = &mesh.triangles[3 * t];
    double p[3][3];
    for (int c = 0; c < 3; ++c)
      for (int a = 0; a < 3; ++a) p[c][a] = mesh.positions[3 * v[c] + static_cast<std::uint32_t>(a)];
    const double e1[3] = {p[1][0] - p[0][0], p[1][1] - p[0][1], p[1][2] - p[0][2]};
    const double e2[3] = {p[2][0] - p[0][0], p[2][1] - p[0][1], p[2][2] - p[0][2]};
    double nrm[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]};
    const double len = std::sqrt(nrm[0] * nrm[0] + nrm[1] * nrm[1] + nrm[2] * nrm[2]);
    if (len == 0) continue;  // a degenerate triangle has no direction to give
    for (int c = 0; c < 3; ++c)
      for (int a = 0; a < 3; ++a) sum[3 * v[c] + static_cast<std::uint32_t>(a)] += nrm[a] / len;
  }
  mesh.normals.assign(3 * nv, 0.0f);
  for (std::size_t v = 0; v < nv; ++v) {
    const double len =
        std::sqrt(sum[3 * v] * sum[3 * v] + sum[3 * v + 1] * sum[3 * v + 1] + sum[3 * v + 2] * sum[3 * v + 2]);
    if (len == 0) continue;
    for (std::size_t a = 0; a < 3; ++a) mesh.normals[3 * v + a] = static_cast<float>(sum[3 * v + a] / len);
  }
}

double signed_volume(const TriangleMesh& mesh) {
  double volume = 0;
  for (std::size_t t = 0; t < mesh.triangle_count(); ++t) {
    const float* a = &mesh.positions[3 * mesh.triangles[3 * t]];
    const float* b = &mesh.positions[3 * mesh.triangles[3 * t + 1]];
    const float* c = &mesh.positions[3 * mesh.triangles[3 * t + 2]];
    volume += (double(a[0]) * (double(b[1]) * c[2] - double(b[2]) * c[1]) -
               double(a[1]) * (double(b[0]) * c[2] - double(b[2]) * c[0]) +
               double(a[2]) * (double(b[0]) * c[1] - double(b[1]) * c[0]));
  }
  return volume / 6.0;
}

double surface_area(const TriangleMesh& mesh) {
  double area = 0;
  for (std::size_t t = 0; t < mesh.triangle_count(); ++t) {
    const float* a = &mesh.positions[3 * mesh.triangles[3 * t]];
    const float* b = &mesh.positions[3 * mesh.triangles[3 * t + 1]];
    const float* c = &mesh.positions[3 * mesh.triangles[3 * t + 2]];
    const double e1[3] = {double(b[0]) - a[0], double(b[1]) - a[1], double(b[2]) - a[2]};
    const double e2[3] = {double(c[0]) - a[0], double(c[1]) - a[1], double(c[2]) - a[2]};
    const double x = e1[1] * e2[2] - e1[2] * e2[1], y = e1[2] * e2[0] - e1[0] * e2[2],
                 z = e1[0] * e2[1] - e1[1] * e2[0];
    area += 0.5 * std::sqrt(x * x + y * y + z * z);
  }
  return area;
}

}  // namespace espgrid::surface
