#include "src/io/structure_reader.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "src/core/errors.h"
#include "src/core/grid.h"

namespace espgrid {

StructureFormat parse_format_name(const std::string& name) {
  std::string lower = name;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "pqr") return StructureFormat::Pqr;
  if (lower == "xyz" || lower == "extxyz") return StructureFormat::Xyz;
  if (lower == "pdb" || lower == "ent") return StructureFormat::Pdb;
  if (lower == "cif" || lower == "mmcif") return StructureFormat::Mmcif;
  throw UsageError("unknown input format '" + name + "' (use pqr, xyz, pdb or cif)");
}

StructureFormat format_from_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  if (!ext.empty()) ext.erase(0, 1);
  try {
    return parse_format_name(ext);
  } catch (const UsageError&) {
    throw UsageError("cannot tell the format of '" + path +
                     "' from its extension; name it .pqr, .xyz, .pdb or .cif, or pass --format pqr|xyz|pdb|cif");
  }
}

std::size_t affordable_atoms(std::size_t wanted) {
  const std::size_t available = available_memory_bytes();
  const std::size_t affordable = available != 0 ? available / (4 * kHostBytesPerAtom) : std::size_t{1} << 20;
  return std::min(wanted, affordable);
}

Structure read_structure(const std::string& path, StructureFormat format) {
  if (needs_charge_assignment(format))
    throw UsageError(path +
                     " has no charges or radii: `espgrid map` assigns them with pdb2pqr (--forcefield, --ph, "
                     "--keep-pqr); elsewhere give the PQR it kept");
  LineSource lines(path);  // refuses directories and devices
  return format == StructureFormat::Pqr ? read_pqr(lines) : read_xyz(lines);
}

}  // namespace espgrid
