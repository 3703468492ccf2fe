// Triangle meshes: the molecular surface and the potential's isosurfaces that `espgrid view`
// draws in a browser and `espgrid surface` writes as a file. Plain data (positions, normals,
// triangles as flat arrays) plus the operations the surface needs: contouring a scalar field,
// keeping the largest connected piece, smoothing, vertex normals. Nothing here knows about
// potentials, atoms or file formats.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace espgrid::surface {

struct TriangleMesh {
  std::vector<float> positions;          ///< x, y, z of each vertex, Å
  std::vector<float> normals;            ///< unit outward normal of each vertex (empty until computed)
  std::vector<std::uint32_t> triangles;  ///< three vertex indices a triangle, counter-clockwise seen from outside

  std::size_t vertex_count() const noexcept { return positions.size() / 3; }
  std::size_t triangle_count() const noexcept { return triangles.size() / 3; }
  bool empty() const noexcept { return triangles.empty(); }
};

/// A scalar field on a regular grid, x fastest: value(i, j, k) = values[i + nx*(j + ny*k)].
struct ScalarField {
  const float* values = nullptr;
  std::array<std::int64_t, 3> dims{};  ///< points along x, y, z
  std::array<double, 3> origin{};      ///< position of point (0, 0, 0), Å
  std::array<double, 3> spacing{};     ///< Å
};

/// The level set {value = level} of `field` as a triangle mesh, by surface nets: one vertex in
/// each grid cell the level crosses, at the mean of the points where the cell's edges cross it
/// (linear interpolation along each edge), and two triangles for each grid edge that crosses,
/// joining the four cells around it. "Inside" is value > level when `inside_above`, else
/// value < level; triangles face outwards (their normals point from inside to outside). Cells
/// at the grid's faces close nothing: a level set that leaves the grid leaves an open edge.
/// Every `stride`-th point along each axis is used (1: all), for fields too fine to draw.
TriangleMesh contour(const ScalarField& field, double level, bool inside_above, int stride = 1);

/// The connected pieces (triangles sharing vertices) of a closed, outward-facing mesh that
/// enclose a positive volume: every molecule of a complex, each chain apart from the others.
/// Pieces of negative volume are the walls of cavities inside a molecule (their triangles face
/// into the cavity), which no one outside can see: they are dropped and the vertices renumbered.
/// (viz/render_potential.py keeps only the largest piece, which also drops a second molecule.)
TriangleMesh outer_components(const TriangleMesh& mesh);

/// Taubin's windowed-sinc low-pass filter of the vertex positions (Taubin, Zhang and Golub,
/// "Optimal surface smoothing as filter design", 1996), as VTK's vtkWindowedSincPolyDataFilter
/// applies it (Hamming window, pass band in its units 0..2, the offset that makes the filter 1
/// at the pass band): smooths the staircase of a contoured grid while keeping the volume.
/// `iterations` applications of the neighbour average; 0 leaves the mesh as it is.
void smooth_windowed_sinc(TriangleMesh& mesh, int iterations, double pass_band);

/// Vertex normals: the mean of the unit normals of the triangles around each vertex (as
/// vtkPolyDataNormals computes them), normalised; a vertex of no triangle gets (0, 0, 0).
void compute_normals(TriangleMesh& mesh);

/// Signed volume enclosed by the mesh, Å³ (positive when the triangles face outwards; only
/// meaningful for a closed mesh).
double signed_volume(const TriangleMesh& mesh);

/// Total area of the triangles, Å².
double surface_area(const TriangleMesh& mesh);

}  // namespace espgrid::surface
