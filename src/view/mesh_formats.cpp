#include "src/view/mesh_formats.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "src/core/errors.h"
#include "src/core/json.h"
#include "src/core/text_format.h"
#include "src/os/atomic_output_file.h"
#include "src/os/file_output.h"

namespace espgrid {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the mesh writers write the machine's bytes as little-endian files");

void check(const ColouredMesh& m) {
  if (!m.mesh || !m.potential || m.potential->size() != m.mesh->vertex_count() ||
      m.colours.size() != m.mesh->vertex_count() || m.mesh->normals.size() != m.mesh->positions.size())
    throw Error("internal error: a coloured mesh needs one value, colour and normal per vertex");
}

/// A comment safe on one line of a text header (PLY's "comment", XML attribute text): ASCII
/// printable only, anything else as '?'.
std::string one_line(const std::string& text) {
  std::string out;
  for (unsigned char c : text) out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  return out;
}

std::string json_number(double v) { return std::isfinite(v) ? shortest_text(v) : "0"; }

template <class T>
void put(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

/// sRGB (0..255) to linear light (0..1): glTF's vertex colours are linear.
float linear(std::uint8_t c) {
  const double s = c / 255.0;
  return static_cast<float>(s <= 0.04045 ? s / 12.92 : std::pow((s + 0.055) / 1.055, 2.4));
}

void write_all(const std::string& path, const std::string& bytes) {
  OutputFile file(path);
  file.append(bytes.data(), bytes.size());
  file.close();
}

}  // namespace

MeshFormat mesh_format_from_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".ply") return MeshFormat::Ply;
  if (ext == ".glb") return MeshFormat::Glb;
  if (ext == ".vtp") return MeshFormat::Vtp;
  throw UsageError("cannot tell the mesh format of '" + path +
                   "': name it .ply (PLY), .glb (glTF binary) or .vtp (VTK PolyData)");
}

std::string mesh_format_name(MeshFormat format) {
  switch (format) {
    case MeshFormat::Ply:
      return "PLY";
    case MeshFormat::Glb:
      return "glTF binary";
    case MeshFormat::Vtp:
      return "VTK PolyData";
  }
  return "?";
}

void write_ply_to(const ColouredMesh& m, const std::string& path) {
  check(m);
  const surface::TriangleMesh& mesh = *m.mesh;
  std::string out = "ply\nformat binary_little_endian 1.0\n";
  out += "comment espgrid " ESPGRID_VERSION ": molecular surface coloured by the potential (" + one_line(m.units) +
         "), red -" + json_number(m.limit) + " to blue +" + json_number(m.limit) + "\n";
  for (const std::string& c : m.comments) out += "comment " + one_line(c) + "\n";
  out += "element vertex " + std::to_string(mesh.vertex_count()) + "\n";
  out += "property float x\nproperty float y\nproperty float z\n";
  out += "property float nx\nproperty float ny\nproperty float nz\n";
  out += "property uchar red\nproperty uchar green\nproperty uchar blue\n";
  out += "property float potential\n";
  out += "element face " + std::to_string(mesh.triangle_count()) + "\n";
  out += "property list uchar int vertex_indices\nend_header\n";
  out.reserve(out.size() + 31 * mesh.vertex_count() + 13 * mesh.triangle_count());
  for (std::size_t v = 0; v < mesh.vertex_count(); ++v) {
    for (int a = 0; a < 3; ++a) put(out, mesh.positions[3 * v + static_cast<std::size_t>(a)]);
    for (int a = 0; a < 3; ++a) put(out, mesh.normals[3 * v + static_cast<std::size_t>(a)]);
    for (std::uint8_t c : m.colours[v]) put(out, c);
    put(out, (*m.potential)[v]);
  }
  for (std::size_t t = 0; t < mesh.triangle_count(); ++t) {
    put(out, std::uint8_t{3});
    for (int c = 0; c < 3; ++c)
      put(out, static_cast<std::int32_t>(mesh.triangles[3 * t + static_cast<std::size_t>(c)]));
  }
  write_all(path, out);
}

void write_glb_to(const ColouredMesh& m, const std::string& path) {
  check(m);
  const surface::TriangleMesh& mesh = *m.mesh;
  const std::size_t n = mesh.vertex_count(), t = mesh.triangle_count();
  if (n == 0) throw Error("internal error: an empty mesh has no glTF accessors");
  // The binary buffer: positions, normals, colours (linear, float), potential, indices; each
  // piece a multiple of 4 bytes, as glTF's vertex attributes must be aligned.
  std::string bin;
  bin.reserve(40 * n + 12 * t);
  float lo[3] = {std::numeric_limits<float>::max(), std::numeric_limits<float>::max(),
                 std::numeric_limits<float>::max()};
  float hi[3] = {-lo[0], -lo[1], -lo[2]};
  for (std::size_t i = 0; i < 3 * n; ++i) {
    put(bin, mesh.positions[i]);
    lo[i % 3] = std::min(lo[i % 3], mesh.positions[i]);
    hi[i % 3] = std::max(hi[i % 3], mesh.positions[i]);
  }
  const std::size_t normals_at = bin.size();
  for (std::size_t i = 0; i < 3 * n; ++i) put(bin, mesh.normals[i]);
  const std::size_t colours_at = bin.size();
  for (const auto& c : m.colours)
    for (std::uint8_t channel : c) put(bin, linear(channel));
  const std::size_t potential_at = bin.size();
  for (float v : *m.potential) put(bin, v);
  const std::size_t indices_at = bin.size();
  for (std::uint32_t i : mesh.triangles) put(bin, i);
  const std::size_t total = bin.size();

  const auto view = [](std::size_t offset, std::size_t length, int target) {
    return std::string("{\"buffer\":0,\"byteOffset\":") + std::to_string(offset) +
           ",\"byteLength\":" + std::to_string(length) + ",\"target\":" + std::to_string(target) + "}";
  };
  std::string json = "{\"asset\":{\"version\":\"2.0\",\"generator\":\"espgrid " ESPGRID_VERSION "\",\"extras\":{";
  json +=
      "\"potential_units\":" + json_quoted(m.units) + ",\"colour_limit\":" + json_number(m.limit) + ",\"comments\":[";
  for (std::size_t i = 0; i < m.comments.size(); ++i) json += std::string(i ? "," : "") + json_quoted(m.comments[i]);
  json += "]}},\"scene\":0,\"scenes\":[{\"nodes\":[0]}],\"nodes\":[{\"mesh\":0,\"name\":\"molecular surface\"}],";
  json +=
      "\"meshes\":[{\"name\":\"molecular surface coloured by the potential\",\"primitives\":[{\"attributes\":"
      "{\"POSITION\":0,\"NORMAL\":1,\"COLOR_0\":2,\"_POTENTIAL\":3},\"indices\":4,\"material\":0,\"mode\":4}]}],";
  // Unlit-looking plastic: no metal, rough; the colour is the vertices'.
  json +=
      "\"materials\":[{\"name\":\"potential\",\"pbrMetallicRoughness\":{\"baseColorFactor\":[1,1,1,1],"
      "\"metallicFactor\":0,\"roughnessFactor\":0.8}}],";
  json += "\"buffers\":[{\"byteLength\":" + std::to_string(total) + "}],\"bufferViews\":[";
  json += view(0, normals_at, 34962) + "," + view(normals_at, colours_at - normals_at, 34962) + "," +
          view(colours_at, potential_at - colours_at, 34962) + "," +
          view(potential_at, indices_at - potential_at, 34962) + "," + view(indices_at, total - indices_at, 34963) +
          "],\"accessors\":[";
  json += "{\"bufferView\":0,\"componentType\":5126,\"count\":" + std::to_string(n) + ",\"type\":\"VEC3\",\"min\":[" +
          json_number(lo[0]) + "," + json_number(lo[1]) + "," + json_number(lo[2]) + "],\"max\":[" +
          json_number(hi[0]) + "," + json_number(hi[1]) + "," + json_number(hi[2]) + "]},";
  json += "{\"bufferView\":1,\"componentType\":5126,\"count\":" + std::to_string(n) + ",\"type\":\"VEC3\"},";
  json += "{\"bufferView\":2,\"componentType\":5126,\"count\":" + std::to_string(n) + ",\"type\":\"VEC3\"},";
  json += "{\"bufferView\":3,\"componentType\":5126,\"count\":" + std::to_string(n) + ",\"type\":\"SCALAR\"},";
  json += "{\"bufferView\":4,\"componentType\":5125,\"count\":" + std::to_string(3 * t) + ",\"type\":\"SCALAR\"}]}";
  while (json.size() % 4) json += ' ';

  std::string out;
  const std::uint32_t length = static_cast<std::uint32_t>(12 + 8 + json.size() + 8 + total);
  if (12 + 8 + json.size() + 8 + total > 0xFFFFFFFFu) throw UsageError("the mesh is too large for a .glb file (4 GiB)");
  put(out, std::uint32_t{0x46546C67});  // "glTF"
  put(out, std::uint32_t{2});
  put(out, length);
  put(out, static_cast<std::uint32_t>(json.size()));
  put(out, std::uint32_t{0x4E4F534A});  // "JSON"
  out += json;
  put(out, static_cast<std::uint32_t>(total));
  put(out, std::uint32_t{0x004E4942});  // "BIN"
  out += bin;
  write_all(path, out);
}

void write_vtp_to(const ColouredMesh& m, const std::string& path) {
  check(m);
  const surface::TriangleMesh& mesh = *m.mesh;
  const std::size_t n = mesh.vertex_count(), t = mesh.triangle_count();
  // The appended block: each array a UInt64 byte count, then its bytes (as the .vti writer).
  std::string block;
  std::vector<std::size_t> offsets;
  const auto begin = [&](std::uint64_t bytes) {
    offsets.push_back(block.size());
    put(block, bytes);
  };
  const std::string units = one_line(m.units) + '\0';
  begin(units.size());
  block += units;
  begin(sizeof(double));
  put(block, m.limit);
  begin(sizeof(float) * n);
  for (float v : *m.potential) put(block, v);
  begin(sizeof(float) * 3 * n);
  for (float v : mesh.normals) put(block, v);
  begin(3 * n);
  for (const auto& c : m.colours)
    for (std::uint8_t channel : c) put(block, channel);
  begin(sizeof(float) * 3 * n);
  for (float v : mesh.positions) put(block, v);
  begin(sizeof(std::int64_t) * 3 * t);
  for (std::uint32_t i : mesh.triangles) put(block, static_cast<std::int64_t>(i));
  begin(sizeof(std::int64_t) * t);
  for (std::size_t i = 1; i <= t; ++i) put(block, static_cast<std::int64_t>(3 * i));

  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (float v : *m.potential)
    if (std::isfinite(v)) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  const auto at = [&](int i) { return std::to_string(offsets[static_cast<std::size_t>(i)]); };
  std::string xml = "<?xml version=\"1.0\"?>\n";
  xml += "<!-- espgrid " ESPGRID_VERSION ": molecular surface coloured by the potential -->\n";
  for (const std::string& c : m.comments) {
    std::string text = one_line(c);
    for (std::size_t p = text.find("--"); p != std::string::npos; p = text.find("--")) text.replace(p, 2, "- -");
    xml += "<!-- " + text + " -->\n";
  }
  xml += "<VTKFile type=\"PolyData\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n";
  xml += "  <PolyData>\n    <FieldData>\n";
  xml += "      <Array type=\"String\" Name=\"units\" NumberOfTuples=\"1\" format=\"appended\" offset=\"" + at(0) +
         "\"/>\n";
  xml += "      <DataArray type=\"Float64\" Name=\"colour_limit\" NumberOfTuples=\"1\" format=\"appended\" offset=\"" +
         at(1) + "\"/>\n";
  xml += "    </FieldData>\n";
  xml += "    <Piece NumberOfPoints=\"" + std::to_string(n) +
         "\" NumberOfVerts=\"0\" NumberOfLines=\"0\" "
         "NumberOfStrips=\"0\" NumberOfPolys=\"" +
         std::to_string(t) + "\">\n";
  xml += "      <PointData Scalars=\"potential\" Normals=\"Normals\">\n";
  xml += "        <DataArray type=\"Float32\" Name=\"potential\" format=\"appended\"" +
         (std::isfinite(lo) ? " RangeMin=\"" + json_number(lo) + "\" RangeMax=\"" + json_number(hi) + "\""
                            : std::string()) +
         " offset=\"" + at(2) + "\"/>\n";
  xml += "        <DataArray type=\"Float32\" Name=\"Normals\" NumberOfComponents=\"3\" format=\"appended\" offset=\"" +
         at(3) + "\"/>\n";
  xml += "        <DataArray type=\"UInt8\" Name=\"colors\" NumberOfComponents=\"3\" format=\"appended\" offset=\"" +
         at(4) + "\"/>\n";
  xml += "      </PointData>\n      <Points>\n";
  xml += "        <DataArray type=\"Float32\" Name=\"Points\" NumberOfComponents=\"3\" format=\"appended\" offset=\"" +
         at(5) + "\"/>\n";
  xml += "      </Points>\n      <Polys>\n";
  xml += "        <DataArray type=\"Int64\" Name=\"connectivity\" format=\"appended\" offset=\"" + at(6) + "\"/>\n";
  xml += "        <DataArray type=\"Int64\" Name=\"offsets\" format=\"appended\" offset=\"" + at(7) + "\"/>\n";
  xml += "      </Polys>\n    </Piece>\n  </PolyData>\n  <AppendedData encoding=\"raw\">\n   _";
  write_all(path, xml + block + "\n  </AppendedData>\n</VTKFile>\n");
}

void write_mesh(const ColouredMesh& mesh, const std::string& path) {
  const MeshFormat format = mesh_format_from_extension(path);
  AtomicOutputFile out(path);
  switch (format) {
    case MeshFormat::Ply:
      write_ply_to(mesh, out.temporary_path());
      break;
    case MeshFormat::Glb:
      write_glb_to(mesh, out.temporary_path());
      break;
    case MeshFormat::Vtp:
      write_vtp_to(mesh, out.temporary_path());
      break;
  }
  out.commit();
}

}  // namespace espgrid
