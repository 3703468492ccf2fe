// A surface coloured by the potential as a mesh file (`espgrid surface`): binary
// little-endian PLY (Blender, MeshLab, ParaView), glTF 2.0 binary .glb (Blender, three.js and
// other web viewers) and VTK XML PolyData .vtp (ParaView). Each file holds the vertices, their
// outward normals, the triangles, a colour per vertex (the renderer's red–white–blue ramp on
// ±limit) and the potential itself, so a reader can recolour it. Writers know nothing about
// how the mesh or the values were made; each writes atomically (os/atomic_output_file.h).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "src/view/mesh.h"

namespace espgrid {

enum class MeshFormat { Ply, Glb, Vtp };

/// The format from the path's extension (.ply, .glb, .vtp); UsageError naming them otherwise.
MeshFormat mesh_format_from_extension(const std::string& path);
/// "PLY", "glTF binary", "VTK PolyData".
std::string mesh_format_name(MeshFormat format);

struct ColouredMesh {
  const surface::TriangleMesh* mesh = nullptr;       ///< vertices, normals, triangles
  const std::vector<float>* potential = nullptr;     ///< one value a vertex (NaN: unknown), `units`
  std::vector<std::array<std::uint8_t, 3>> colours;  ///< one sRGB colour a vertex
  std::string units;                                 ///< "kT/e", "kcal/mol/e", "V"
  double limit = 5;                                  ///< the colour scale ±limit
  std::vector<std::string> comments;                 ///< provenance lines, ASCII (headers)
};

/// Writes `mesh` to `path` in the format its extension names, atomically. Throws UsageError
/// for an unknown extension and Error naming the file when writing fails (no file is left).
void write_mesh(const ColouredMesh& mesh, const std::string& path);

/// The three formats, straight to `path` (tests use them; write_mesh adds the atomic replace).
void write_ply_to(const ColouredMesh& mesh, const std::string& path);
void write_glb_to(const ColouredMesh& mesh, const std::string& path);
void write_vtp_to(const ColouredMesh& mesh, const std::string& path);

}  // namespace espgrid
