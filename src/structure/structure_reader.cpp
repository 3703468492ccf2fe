#include "src/structure/structure_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <optional>
#include <sys/stat.h>
#include <utility>

#include "src/core/errors.h"
#include "src/core/grid.h"
#include "src/core/switches.h"
#include "src/core/thread_count.h"
#include "src/structure/pqr_ranges.h"

namespace espgrid {
namespace {

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

/// The name without a final ".gz" (any case).
std::string without_gz(const std::string& path) {
  if (path.size() > 3 && lower(path.substr(path.size() - 3)) == ".gz") return path.substr(0, path.size() - 3);
  return path;
}

/// Where standard input is opened: its /dev name, so that the readers' checks (a terminal is a
/// device and refused) and messages apply to it as to any file.
std::string standard_input_path() {
  struct stat st {};
  return ::stat("/dev/stdin", &st) == 0 ? "/dev/stdin" : "/proc/self/fd/0";
}

/// Copies up to 4 characters of `text` into a NUL-padded field.
std::array<char, 4> field_of(std::string_view text) {
  std::array<char, 4> f{};
  for (std::size_t i = 0; i < f.size() && i < text.size(); ++i) f[i] = text[i];
  return f;
}

std::string text_of(const std::array<char, 4>& f) {
  std::size_t n = 0;
  while (n < f.size() && f[n] != '\0') ++n;
  return std::string(f.data(), n);
}

}  // namespace

AtomLabel AtomLabel::make(std::string_view name, std::string_view residue, std::string_view chain, std::int32_t number,
                          char insertion) {
  AtomLabel l;
  l.name = field_of(name);
  l.residue = field_of(residue);
  l.chain = field_of(chain);
  l.number = number;
  l.insertion = insertion == ' ' ? 0 : insertion;
  return l;
}

std::string AtomLabel::atom_name() const { return text_of(name); }
std::string AtomLabel::residue_name() const { return text_of(residue); }
std::string AtomLabel::chain_id() const { return text_of(chain); }

std::string AtomLabel::residue_text() const {
  const std::string c = chain_id();
  return residue_name() + (c.empty() ? "" : " " + c) + " " + std::to_string(number) +
         (insertion ? std::string(1, insertion) : std::string());
}

bool AtomLabel::same_residue(const AtomLabel& o) const {
  return residue == o.residue && chain == o.chain && number == o.number && insertion == o.insertion;
}

StructureFormat parse_format_name(const std::string& name) {
  const std::string l = lower(name);
  if (l == "pqr") return StructureFormat::Pqr;
  if (l == "xyz" || l == "extxyz") return StructureFormat::Xyz;
  if (l == "pdb" || l == "ent") return StructureFormat::Pdb;
  if (l == "cif" || l == "mmcif" || l == "pdbx") return StructureFormat::Mmcif;
  throw UsageError("unknown input format '" + name + "' (use pqr, xyz, pdb or cif)");
}

bool is_standard_input(const std::string& path) { return path == "-"; }

StructureFormat format_from_extension(const std::string& path) {
  if (is_standard_input(path))
    throw UsageError("standard input ('-') has no extension to tell its format: pass --format pqr|xyz|pdb|cif");
  std::string ext = std::filesystem::path(without_gz(path)).extension().string();
  if (!ext.empty()) ext.erase(0, 1);
  try {
    return parse_format_name(ext);
  } catch (const UsageError&) {
    throw UsageError("cannot tell the format of '" + path +
                     "' from its extension; name it .pqr, .xyz, .pdb or .cif (any of them may end in .gz), or pass "
                     "--format pqr|xyz|pdb|cif");
  }
}

bool is_gzip_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  unsigned char magic[2] = {0, 0};
  const bool gzip = ::pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  ::close(fd);
  return gzip;
}

bool read_through_gzip(const std::string& path) {
  if (is_standard_input(path)) return true;
  if (without_gz(path) != path) return true;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;  // the reader says why it cannot open it
  if (!S_ISREG(st.st_mode)) return !S_ISDIR(st.st_mode) && !S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode);
  return is_gzip_file(path);  // downloads are often saved without their .gz
}

std::string structure_stem(const std::string& path) {
  // "-", /dev/stdin, /dev/fd/63, /proc/self/fd/0: names of a descriptor, not of a structure
  if (is_standard_input(path) || path.rfind("/dev/", 0) == 0 || path.rfind("/proc/", 0) == 0) return "";
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return "";
  return std::filesystem::path(without_gz(path)).stem().string();
}

std::unique_ptr<LineSource> open_structure_lines(const std::string& path) {
  const std::string opened = is_standard_input(path) ? standard_input_path() : path;
  return std::make_unique<LineSource>(
      opened, read_through_gzip(path) ? LineSource::Decompress::Gzip : LineSource::Decompress::None);
}

std::size_t affordable_atoms(std::size_t wanted) {
  const std::size_t available = available_memory_bytes();
  const std::size_t affordable = available != 0 ? available / (4 * kHostBytesPerAtom) : std::size_t{1} << 20;
  return std::min(wanted, affordable);
}

std::string_view atom_value_problem(AtomField field, double value) noexcept {
  if (!std::isfinite(value)) return "is not finite";
  switch (field) {
    case AtomField::Coordinate:
      if (std::fabs(value) > kMaxCoordinate) return "is beyond ±1e6 Å; check the units";
      break;
    case AtomField::Charge:
      if (std::fabs(value) > kMaxCharge) return "is implausible (beyond ±1000 e)";
      break;
    case AtomField::Radius:
      if (value < 0) return "is negative";
      if (value > kMaxRadius) return "is implausible (over 100 Å)";
      break;
  }
  return {};
}

Structure read_structure(const std::string& path, StructureFormat format) {
  if (needs_charge_assignment(format))
    throw UsageError(path +
                     " has no charges or radii: `espgrid map` assigns them with pdb2pqr (--forcefield, --ph, "
                     "--keep-pqr); elsewhere give the PQR it kept");
  // A large plain PQR (a capsid's 1.9 M atoms, 135 MB): every thread reads a range of it (0.28-0.47 s
  // of one H200 host's read was one thread splitting the lines). Up to 16 threads: more do not pay.
  // ESPGRID_PQR_RANGES=0: line by line only (for measuring what this saves).
  if (format == StructureFormat::Pqr && !read_through_gzip(path) && !switched_off("ESPGRID_PQR_RANGES"))
    if (std::optional<Structure> s = read_pqr_in_ranges(path, std::min(16, threads_to_use(0)))) return std::move(*s);
  const std::unique_ptr<LineSource> lines = open_structure_lines(path);  // refuses directories and devices
  return format == StructureFormat::Pqr ? read_pqr(*lines) : read_xyz(*lines);
}

}  // namespace espgrid
