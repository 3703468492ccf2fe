// What pdb2pqr made of a PDB file: the input's atoms against the atoms of its PQR, by position
// (pdb2pqr copies coordinates; it renames atoms and residues and drops chain IDs, so names alone
// cannot be compared), the residues whose heavy atoms it left out (ligands, ions, waters with
// --drop-water, residues it has no template for), and the side chains it flipped.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "src/structure/pdb_records.h"
#include "src/structure/structure_reader.h"

namespace espgrid {

/// What PDB2PQR made of the structure: atoms in and out, and the input's heavy atoms its PQR
/// lacks. Hydrogens are not compared: PDB2PQR rebuilds them.
struct Pdb2pqrAccount {
  /// An input residue with heavy atoms left out.
  struct Residue {
    std::string name;          ///< "NAG B 501" (residue, chain, number and insertion code as in the input)
    AtomLabel label;           ///< its residue fields (the atom name is its first atom's)
    std::size_t left_out = 0;  ///< its heavy atoms missing from the PQR
    std::size_t heavy = 0;     ///< its heavy atoms in the input
    bool whole() const noexcept { return left_out == heavy; }
  };
  std::size_t input_atoms = 0;       ///< ATOM/HETATM atoms of the first model (alternate locations once)
  std::size_t input_hydrogens = 0;   ///< of them, hydrogen (H, D)
  std::size_t output_atoms = 0;      ///< atoms in PDB2PQR's PQR
  std::size_t output_hydrogens = 0;  ///< of them, hydrogen
  std::size_t left_out_atoms = 0;    ///< input heavy atoms at no position of the PQR's atoms
  std::vector<Residue> left_out;     ///< their residues, in input order
  /// Residues whose side chain pdb2pqr flipped (ASN/GLN amides, HIS rings, to make hydrogen
  /// bonds): "GLN A 2 (OE1/NE2)". Their atoms are kept, 0.1-0.3 Å from where the input had them.
  std::vector<std::string> flipped;

  /// "NAG B 501 (3 of 3 heavy atoms), ZN C 601 (1 of 1)", at most `most` residues named; waters
  /// are counted at the end ("and 80 waters"), not named.
  std::string left_out_text(std::size_t most = 10) const;
};

/// How far a flipped atom may lie from the input atom whose place it took, Å: pdb2pqr rotates an
/// amide or a histidine ring by 180° about its last side-chain bond, which puts OD1 within about
/// 0.2 Å of where ND2 was (measured: 0.15 Å on 1HPV's GLN A 2 and ASN B 98); covalent neighbours
/// are at least 1 Å apart, so no other atom is within this distance.
inline constexpr double kFlipTolerance = 0.5;

/// Counts what PDB2PQR kept: `input` the atoms of the PDB file it read (read_pdb_atoms), `pqr`
/// the structure of its PQR (with labels). An input heavy atom is kept when a PQR atom sits at
/// one of its positions to 0.001 Å, or, failing that, when a PQR heavy atom of the same residue
/// number that matched no input atom lies within kFlipTolerance (a flip).
Pdb2pqrAccount account_for_atoms(const std::vector<PdbAtom>& input, const Structure& pqr);

}  // namespace espgrid
