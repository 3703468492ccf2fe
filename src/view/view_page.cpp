#include "src/view/view_page.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "src/core/errors.h"
#include "src/core/json.h"
#include "src/core/text_format.h"
#include "src/os/atomic_output_file.h"
#include "src/os/file_output.h"

#if ESPGRID_HAVE_ZLIB
#include <zlib.h>
#endif

#ifndef ESPGRID_WEB_BUILD_DIR
#define ESPGRID_WEB_BUILD_DIR ""
#endif
#ifndef ESPGRID_WEB_INSTALL_DIR
#define ESPGRID_WEB_INSTALL_DIR ""
#endif

namespace espgrid {
namespace {

constexpr const char* kLibraryFile = "3Dmol-min.js";
constexpr const char* kLibraryLicenseFile = "3Dmol-min.js.LICENSE.txt";
constexpr const char* kLibraryVersionFile = "library-version.txt";
constexpr const char* kUnavailableFile = "unavailable.txt";  // written by the build when npm could not bundle 3Dmol.js

bool read_file(const std::filesystem::path& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return false;
  out = text.str();
  return true;
}

/// `text` safe inside a <script> element: "</" (as in "</script>") and "<!--" end or confuse
/// the element, so they are broken with a backslash, which JavaScript strings, comments and
/// regular expressions read the same ("<\/" is "</").
std::string script_safe(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '<' && i + 1 < text.size() && (text[i + 1] == '/' || text[i + 1] == '!')) {
      out += "<\\";
      continue;
    }
    out += text[i];
  }
  return out;
}

/// A JSON string literal; '<', '>' and '&' as \u escapes so that nothing in it can close the
/// <script> element that holds the JSON.
std::string json_string(const std::string& s) {
  std::string out;
  for (const char c : json_quoted(s)) {  // '<', '>', '&' stand for themselves in json_quoted's output
    switch (c) {
      case '<':
        out += "\\u003c";
        break;
      case '>':
        out += "\\u003e";
        break;
      case '&':
        out += "\\u0026";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  return shortest_text(v);
}

void append_bytes(std::string& out, const void* data, std::size_t bytes) {
  out.append(static_cast<const char*>(data), bytes);
}

/// A mesh's data block and the numbers that decode it (the page's JSON). Little-endian, as the
/// browser's typed arrays read it on every machine espgrid builds on (x86-64, aarch64):
///   int32  3m  triangle corners as differences from the corner before (the first from 0):
///              neighbouring triangles share vertices, so the differences are small and gzip
///              packs them to a few bits each;
///   uint16 3n  positions, quantized in the mesh's box: min + q·step per axis (step =
///              extent/65535: 0.005 Å for a 300 Å structure, far below what a screen shows);
///   int16  n   values (when given), quantized over their finite range: min + (q + 32767)·step,
///              −32768 for NaN (outside the map, drawn grey); 1/65534 of the range is far finer
///              than a colour ramp's 256 steps;
///   int8   3n  unit normals × 127.
struct MeshBlock {
  std::string bytes;
  std::array<double, 3> origin{}, step{};
  double value_min = 0, value_step = 0;
};

MeshBlock mesh_block(const surface::TriangleMesh& mesh, const std::vector<float>* values) {
  MeshBlock block;
  std::string& out = block.bytes;
  const std::size_t n = mesh.vertex_count(), m = mesh.triangle_count();
  out.reserve(12 * m + 9 * n);
  std::int64_t previous = 0;
  for (std::size_t i = 0; i < 3 * m; ++i) {
    const auto delta = static_cast<std::int32_t>(static_cast<std::int64_t>(mesh.triangles[i]) - previous);
    previous = mesh.triangles[i];
    append_bytes(out, &delta, sizeof delta);
  }
  for (int a = 0; a < 3; ++a) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (std::size_t v = 0; v < n; ++v) {
      lo = std::min(lo, double(mesh.positions[3 * v + static_cast<std::size_t>(a)]));
      hi = std::max(hi, double(mesh.positions[3 * v + static_cast<std::size_t>(a)]));
    }
    block.origin[static_cast<std::size_t>(a)] = n ? lo : 0;
    block.step[static_cast<std::size_t>(a)] = n && hi > lo ? (hi - lo) / 65535.0 : 1.0;
  }
  for (std::size_t i = 0; i < 3 * n; ++i) {
    const std::size_t a = i % 3;
    const auto q = static_cast<std::uint16_t>(
        std::clamp(std::lround((double(mesh.positions[i]) - block.origin[a]) / block.step[a]), 0L, 65535L));
    append_bytes(out, &q, sizeof q);
  }
  if (values) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (float v : *values)
      if (std::isfinite(v)) {
        lo = std::min(lo, double(v));
        hi = std::max(hi, double(v));
      }
    block.value_min = std::isfinite(lo) ? lo : 0;
    block.value_step = std::isfinite(lo) && hi > lo ? (hi - lo) / 65534.0 : 1.0;
    for (float v : *values) {
      std::int16_t q = -32768;
      if (std::isfinite(v))
        q = static_cast<std::int16_t>(
            std::clamp(std::lround((double(v) - block.value_min) / block.value_step) - 32767L, -32767L, 32767L));
      append_bytes(out, &q, sizeof q);
    }
  }
  std::string normals(3 * n, '\0');
  for (std::size_t i = 0; i < mesh.normals.size() && i < normals.size(); ++i)
    normals[i] =
        static_cast<char>(static_cast<std::int8_t>(std::lround(std::clamp(mesh.normals[i], -1.0f, 1.0f) * 127.0f)));
  out += normals;
  return block;
}

std::string mesh_json(const MeshBlock& b, const std::string& name, const surface::TriangleMesh& mesh, bool values) {
  std::string json = "\"blob\":" + json_string(name) + ",\"vertices\":" + std::to_string(mesh.vertex_count()) +
                     ",\"triangles\":" + std::to_string(mesh.triangle_count()) +
                     ",\"values\":" + (values ? "true" : "false") + ",\"origin\":[" + json_number(b.origin[0]) + "," +
                     json_number(b.origin[1]) + "," + json_number(b.origin[2]) + "],\"step\":[" +
                     json_number(b.step[0]) + "," + json_number(b.step[1]) + "," + json_number(b.step[2]) + "]";
  if (values) json += ",\"value_min\":" + json_number(b.value_min) + ",\"value_step\":" + json_number(b.value_step);
  return json;
}

struct Block {
  std::string name;
  std::string encoding;   // "gzip" or "none"
  std::size_t bytes = 0;  // before encoding
  std::string base64;
};

Block make_block(const std::string& name, const std::string& bytes) {
  Block b;
  b.name = name;
  b.bytes = bytes.size();
  std::string packed;
  if (gzip_bytes(bytes, packed)) {
    b.encoding = "gzip";
    b.base64 = base64(packed);
  } else {
    b.encoding = "none";
    b.base64 = base64(bytes);
  }
  return b;
}

std::string replace_marker(std::string page, const std::string& marker, const std::string& content) {
  const std::size_t at = page.find(marker);
  if (at == std::string::npos) throw Error("the page template lacks its marker " + marker + " (web/src/page.html)");
  page.replace(at, marker.size(), content);
  return page;
}

std::string html_text(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

std::string rgb_hex(double r, double g, double b) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "#%02x%02x%02x", static_cast<int>(std::lround(255 * r)),
                static_cast<int>(std::lround(255 * g)), static_cast<int>(std::lround(255 * b)));
  return buffer;
}

}  // namespace

std::string base64(const std::string& bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  const auto byte = [&](std::size_t k) { return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[k])); };
  for (; i + 2 < bytes.size(); i += 3) {
    const std::uint32_t v = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += kAlphabet[v >> 6 & 63];
    out += kAlphabet[v & 63];
  }
  if (i + 1 == bytes.size()) {
    const std::uint32_t v = byte(i) << 16;
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += "==";
  } else if (i + 2 == bytes.size()) {
    const std::uint32_t v = byte(i) << 16 | byte(i + 1) << 8;
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += kAlphabet[v >> 6 & 63];
    out += '=';
  }
  return out;
}

bool gzip_bytes(const std::string& bytes, std::string& out) {
#if ESPGRID_HAVE_ZLIB
  z_stream z{};
  // windowBits 15 + 16: a gzip wrapper, which the browsers' DecompressionStream("gzip") reads.
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return false;
  std::string packed(deflateBound(&z, static_cast<uLong>(bytes.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(packed.data());
  z.avail_out = static_cast<uInt>(packed.size());
  const int rc = deflate(&z, Z_FINISH);
  const std::size_t written = packed.size() - z.avail_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END || bytes.size() > 0xFFFFFFFFu) return false;
  packed.resize(written);
  out = std::move(packed);
  return true;
#else
  (void)bytes;
  (void)out;
  return false;
#endif
}

std::vector<std::string> web_asset_directories() {
  std::vector<std::string> dirs;
  // A directory the user names is the only one looked in: a mistake there must not be hidden
  // by another copy.
  if (const char* env = std::getenv("ESPGRID_WEB_DIR"); env && *env) return {env};
  if (std::strlen(ESPGRID_WEB_BUILD_DIR) > 0) dirs.emplace_back(ESPGRID_WEB_BUILD_DIR);
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    const std::filesystem::path bin = std::filesystem::path(exe).parent_path();
    dirs.push_back((bin.parent_path() / "share" / "espgrid" / "web").string());
  }
  if (std::strlen(ESPGRID_WEB_INSTALL_DIR) > 0) dirs.emplace_back(ESPGRID_WEB_INSTALL_DIR);
  return dirs;
}

WebAssets load_web_assets() {
  std::string tried, why_unavailable;
  for (const std::string& dir : web_asset_directories()) {
    const std::filesystem::path d(dir);
    WebAssets a;
    a.directory = dir;
    std::string reason;
    if (read_file(d / kUnavailableFile, reason) && why_unavailable.empty()) why_unavailable = reason;
    if (read_file(d / kLibraryFile, a.library) && read_file(d / "page.html", a.page_template) &&
        read_file(d / "viewer.js", a.viewer_script)) {
      read_file(d / kLibraryLicenseFile, a.library_notice);
      if (read_file(d / kLibraryVersionFile, a.library_version)) {
        while (!a.library_version.empty() && std::isspace(static_cast<unsigned char>(a.library_version.back())))
          a.library_version.pop_back();
      } else {
        a.library_version = "3Dmol.js";
      }
      return a;
    }
    tried += "\n  " + dir;
  }
  std::string message = "the viewer library (3Dmol.js) is not installed: looked in" + tried;
  if (!why_unavailable.empty()) {
    while (!why_unavailable.empty() && std::isspace(static_cast<unsigned char>(why_unavailable.back())))
      why_unavailable.pop_back();
    message += "\nthe build said: " + why_unavailable;
  }
  message +=
      "\nthe build bundles it from web/ with npm (Node.js and npm: scripts/install-deps.sh), then "
      "`cmake --build build` and `cmake --install build`; or set ESPGRID_WEB_DIR to a directory holding "
      "3Dmol-min.js, page.html and viewer.js";
  throw Error(message);
}

namespace {

/// The page's isosurfaces as a JSON array: each one's mesh block, level, label and colour.
std::string isosurfaces_json(const surface::ViewScene& scene, const std::vector<MeshBlock>& iso_blocks) {
  std::string json = "[";
  for (std::size_t i = 0; i < scene.isosurfaces.size(); ++i) {
    const surface::Isosurface& iso = scene.isosurfaces[i];
    // The renderer's isosurface colours (NEG_COLOR, POS_COLOR).
    const std::string colour = iso.level < 0 ? rgb_hex(0.80, 0.12, 0.12) : rgb_hex(0.12, 0.30, 0.85);
    if (i) json += ",";
    json += std::string("{") + mesh_json(iso_blocks[i], "iso" + std::to_string(i), iso.mesh, false) +
            ",\"level\":" + json_number(iso.level) + ",\"label\":" +
            json_string(std::string(iso.level > 0 ? "+" : "\u2212") + number_text(std::fabs(iso.level)) + " " +
                        scene.units) +
            ",\"color\":" + json_string(colour) + "}";
  }
  return json + "]";
}

}  // namespace

std::string view_page_html(const surface::ViewScene& scene, const ViewPageText& text, const WebAssets& assets,
                           ViewPageSizes* sizes) {
  std::vector<Block> blocks;
  const MeshBlock surface_block = mesh_block(scene.surface, &scene.values);
  blocks.push_back(make_block("surface", surface_block.bytes));
  std::vector<MeshBlock> iso_blocks;
  for (std::size_t i = 0; i < scene.isosurfaces.size(); ++i) {
    iso_blocks.push_back(mesh_block(scene.isosurfaces[i].mesh, nullptr));
    blocks.push_back(make_block("iso" + std::to_string(i), iso_blocks.back().bytes));
  }
  if (!text.structure_pdb.empty()) blocks.push_back(make_block("atoms", text.structure_pdb));

  std::string json = "{\"format\":1";
  json += ",\"title\":" + json_string(text.title);
  json += ",\"subtitle\":" + json_string(text.subtitle);
  json += ",\"units\":" + json_string(scene.units);
  json += ",\"limit\":" + json_number(scene.limit);
  json += ",\"limit_text\":" + json_string(scene.limit_text);
  json += ",\"offset\":" + json_number(scene.offset);
  json += ",\"surface\":{" + mesh_json(surface_block, "surface", scene.surface, true) +
          ",\"min\":" + json_number(scene.value_min) + ",\"max\":" + json_number(scene.value_max) + "}";
  const auto vec = [](const std::array<double, 3>& u) {
    return std::string("[") + json_number(u[0]) + "," + json_number(u[1]) + "," + json_number(u[2]) + "]";
  };
  json += ",\"camera\":{\"direction\":" + vec(scene.camera_direction) + ",\"up\":" + vec(scene.camera_up) + "}";
  json += ",\"isosurfaces\":" + isosurfaces_json(scene, iso_blocks);
  if (!text.structure_pdb.empty())
    json += ",\"atoms\":{\"blob\":\"atoms\",\"format\":\"pdb\",\"cartoon\":" +
            std::string(text.cartoon ? "true" : "false") + "}";
  json += ",\"notes\":[";
  for (std::size_t i = 0; i < scene.notes.size(); ++i) json += std::string(i ? "," : "") + json_string(scene.notes[i]);
  json += "],\"provenance\":[";
  auto provenance = scene.provenance;
  provenance.emplace_back("page", std::string("espgrid ") + ESPGRID_VERSION + ", " +
                                      utc_timestamp("%Y-%m-%d %H:%M UTC") + "; drawn with " + assets.library_version);
  for (std::size_t i = 0; i < provenance.size(); ++i)
    json += std::string(i ? "," : "") + "[" + json_string(provenance[i].first) + "," +
            json_string(provenance[i].second) + "]";
  json += "],\"blobs\":{";
  for (std::size_t i = 0; i < blocks.size(); ++i)
    json += std::string(i ? "," : "") + json_string(blocks[i].name) +
            ":{\"encoding\":" + json_string(blocks[i].encoding) + ",\"bytes\":" + std::to_string(blocks[i].bytes) + "}";
  json += "}}";

  std::string blob_html;
  for (const Block& b : blocks)
    blob_html +=
        "<script type=\"application/octet-stream\" id=\"espgrid-blob-" + b.name + "\">" + b.base64 + "</script>\n";

  // The notice is itself a comment (3Dmol-min.js.LICENSE.txt), kept as the package ships it.
  std::string library = std::string("// ") + assets.library_version +
                        " (https://3dmol.org), BSD 3-Clause licence; bundled by espgrid\n" + assets.library_notice +
                        "\n" + assets.library;
  std::string page = assets.page_template;
  page = replace_marker(page, "<!--ESPGRID_TITLE-->", html_text(text.title + " \u2014 espgrid view"));
  page = replace_marker(page, "<!--ESPGRID_DATA-->", json);
  page = replace_marker(page, "<!--ESPGRID_BLOBS-->", blob_html);
  page = replace_marker(page, "<!--ESPGRID_VIEWER-->", script_safe(assets.viewer_script));
  // Last: the library is the largest piece, and nothing after it is searched for markers.
  page = replace_marker(page, "<!--ESPGRID_LIBRARY-->", script_safe(library));
  if (sizes) {
    sizes->total = page.size();
    sizes->library = library.size();
    sizes->surface = blocks[0].base64.size();
    sizes->isosurfaces = 0;
    for (std::size_t i = 1; i <= scene.isosurfaces.size(); ++i) sizes->isosurfaces += blocks[i].base64.size();
    sizes->atoms = text.structure_pdb.empty() ? 0 : blocks.back().base64.size();
    sizes->compressed = blocks[0].encoding == "gzip";
  }
  return page;
}

void write_text_file_atomically(const std::string& path, const std::string& html) {
  AtomicOutputFile out(path);
  {
    OutputFile file(out.temporary_path());
    file.append(html.data(), html.size());
    file.close();
  }
  out.commit();
}

}  // namespace espgrid
