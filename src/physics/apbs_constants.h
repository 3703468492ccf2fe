// APBS 3.4.1's numerical thresholds, named after its own (vhal.h, vpmg.h), for the code that must
// decide exactly as APBS decides: its input checks, NOsh's grids, its energies and maps.
#pragma once

namespace espgrid {

inline constexpr double kApbsSmall = 1e-9;      ///< VSMALL: APBS's "zero" for lengths, charges, weights
inline constexpr double kApbsPmgSmall = 1e-12;  ///< VPMGSMALL: below it (mol/L) a bulk has no ions
inline constexpr double kApbsExpMax = 85.0;     ///< EXPMAX: Vcap_exp's largest exponent

}  // namespace espgrid
