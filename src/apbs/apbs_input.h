// An APBS input file (the language APBS 3.4.1's NOsh reads: READ, ELEC, PRINT, QUIT) as plain
// data, and the parser that makes it. Keyword names, defaults and required keywords follow
// APBS's own parser (src/generic/nosh.c, mgparm.c, pbeparm.c); docs/apbs.md lists what espgrid
// supports and where it differs on purpose. Every value keeps the line it came from, so errors
// found later (a molecule id out of range, a grid that does not fit) still name FILE:LINE.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/errors.h"

namespace espgrid::apbs {

/// A defect of an APBS input file, or a keyword espgrid does not support: "FILE:LINE: what".
/// `espgrid apbs` exits 2 for it, before anything is computed or written.
class ApbsInputError : public InputError {
 public:
  using InputError::InputError;
};

/// `mol pqr PATH` or `mol pdb PATH` in READ (a PDB takes its charges and radii from `parm`).
enum class MoleculeFormat { Pqr, Pdb };

struct MoleculeInput {
  MoleculeFormat format = MoleculeFormat::Pqr;
  std::string path;  ///< as written (quotes removed); resolved as APBS does: from the working directory
  std::size_t line = 0;
};

/// `parm flat PATH` in READ: per (residue, atom) charge and radius for `mol pdb`.
struct ParameterInput {
  std::string path;
  std::size_t line = 0;
};

/// `mg-manual`, `mg-auto` (focusing) or `mg-para` (focusing over a grid of partitions).
enum class ElecMethod { Manual, Auto, Parallel };

/// A grid centre: coordinates in Å, or the centre of molecule `molecule` (1-based, `mol N`).
struct CenterInput {
  bool set = false;
  int molecule = 0;  ///< 1-based molecule number; 0: `xyz` holds coordinates
  std::array<double, 3> xyz{};
  std::size_t line = 0;
};

/// A three-number keyword (`dime`, `glen`, `grid`, `cglen`, `fglen`, `pdime`).
template <typename T>
struct Triple {
  bool set = false;
  std::array<T, 3> value{};
  std::size_t line = 0;
};

/// A one-number keyword (`pdie`, `sdie`, `srad`, ...).
struct Scalar {
  bool set = false;
  double value = 0;
  std::size_t line = 0;
};

enum class Equation { Linearized, Nonlinear };                                ///< lpbe | npbe
enum class Boundary { Zero, SingleDebyeHuckel, MultipleDebyeHuckel, Focus };  ///< bcfl zero|sdh|mdh|focus
enum class SurfaceMethod { Mol, Smol, Spline2, Spline4 };                     ///< srfm mol|smol|spl2|spl4
enum class ChargeMethod { Spline0, Spline2, Spline4 };                        ///< chgm spl0|spl2|spl4
enum class EnergyRequest { None, Total, Components };                         ///< calcenergy no|total|comps

/// What `write TYPE FORMAT STEM` writes (APBS's data types).
enum class WriteType { Pot, Charge, Kappa, DielX, DielY, DielZ, Smol, Sspl, Vdw, Ivdw, Lap, Edens, Ndens, Qdens };
enum class WriteFormat { Dx, Gz };

struct WriteRequest {
  WriteType type = WriteType::Pot;
  WriteFormat format = WriteFormat::Dx;
  std::string stem;  ///< files are STEM-PE<rank>.dx (or .dx.gz)
  std::size_t line = 0;
};

/// `ion charge Z conc C radius R` (or APBS's older `ion Z C R`).
struct IonSpecies {
  double charge = 0;         ///< e
  double concentration = 0;  ///< mol/L
  double radius = 0;         ///< Å
  std::size_t line = 0;
};

/// One ELEC block: the grid keywords (MGparm) and the equation's (PBEparm).
struct ElecBlock {
  std::string name;          ///< `elec name N`; empty when unnamed
  std::size_t line = 0;      ///< of `elec`
  std::size_t end_line = 0;  ///< of its `end`
  ElecMethod method = ElecMethod::Manual;

  // Grid (MGparm).
  Triple<int> dime;
  Triple<double> glen, grid;            ///< mg-manual: lengths (Å) or spacings (Å)
  CenterInput gcent;                    ///< mg-manual
  Triple<double> cglen, fglen;          ///< mg-auto, mg-para: coarse and fine lengths, Å
  CenterInput cgcent, fgcent;           ///< mg-auto, mg-para
  Triple<int> pdime;                    ///< mg-para: partitions along x, y, z
  Scalar ofrac;                         ///< mg-para: overlap fraction
  std::optional<int> async;             ///< mg-para: compute only this partition (0-based rank)
  std::optional<double> etol;           ///< solver tolerance (relative residual)
  std::optional<ChargeMethod> charges;  ///< chgm (required)
  std::size_t charges_line = 0;

  // Equation (PBEparm).
  int molecule = 0;  ///< `mol N`, 1-based; 0 until set (required)
  std::size_t molecule_line = 0;
  std::optional<Equation> equation;  ///< required
  std::optional<Boundary> boundary;  ///< required
  std::size_t boundary_line = 0;
  std::vector<IonSpecies> ions;
  Scalar pdie, sdie, srad, swin, sdens, temp;
  std::optional<SurfaceMethod> surface;  ///< required
  std::size_t surface_line = 0;
  EnergyRequest energy = EnergyRequest::None;
  std::size_t energy_line = 0;
  std::vector<WriteRequest> writes;
};

/// `print elecEnergy A - B + C end`: elec blocks (0-based) and the sign each is added with.
struct PrintStatement {
  bool deprecated_energy = false;  ///< `print energy` (APBS warns; same sum, slightly different text)
  std::vector<int> elecs;          ///< 0-based ELEC block indices
  std::vector<int> signs;          ///< +1 or -1, one per elec (the first is +1)
  std::size_t line = 0;
};

struct ApbsInput {
  std::string file;  ///< as given, for messages
  std::vector<MoleculeInput> molecules;
  std::optional<ParameterInput> parameters;
  std::vector<ElecBlock> elecs;
  std::vector<PrintStatement> prints;
  /// Things APBS warns about and espgrid accepts as APBS does (deprecated numeric forms,
  /// keywords with no effect): "FILE:LINE: ...", shown on standard error.
  std::vector<std::string> notices;
};

/// Parses the text of an APBS input file. `file` names it in messages. Throws ApbsInputError
/// ("FILE:LINE: ...") for anything APBS would reject and for anything espgrid does not support.
ApbsInput parse_apbs_input(std::string_view text, const std::string& file);
/// Reads `path` and parses it. Throws ApbsInputError when it cannot be read.
ApbsInput read_apbs_input(const std::string& path);

/// APBS's names: "mg-manual", "lpbe", "sdh", "smol", "spl2", "total", "pot", "dx", ...
std::string_view method_name(ElecMethod method);
std::string_view equation_name(Equation equation);
std::string_view boundary_name(Boundary boundary);
std::string_view surface_name(SurfaceMethod surface);
std::string_view charge_method_name(ChargeMethod charges);
std::string_view energy_request_name(EnergyRequest energy);
std::string_view write_type_name(WriteType type);
std::string_view write_format_name(WriteFormat format);

/// APBS's rule for one axis of a multigrid grid (MGparm_check): `levels` is how often dime − 1
/// halves (less one); a dime over 65 with fewer than 4 levels is replaced by 32·⌊dime/32⌋ + 1
/// (with 4 levels), as APBS does with a warning. levels ≤ 0 is a grid APBS refuses.
struct MultigridAxis {
  int dime = 0;
  int levels = 0;
};
MultigridAxis multigrid_axis(int dime);

/// "ELEC block 2 (complex)" or "ELEC block 1": how messages name a block.
std::string elec_label(const ApbsInput& input, std::size_t elec);

}  // namespace espgrid::apbs
