// What kernels/pb/pb_pipeline_inputs.cu gives kernels/pb/pb_pipeline.cu (CUDA only): the pipeline's
// inputs built on the device from the atoms. pb_pipeline_inputs.cu is built without FMA
// contraction (the host's bits: the surface and the charges equal pb_coefficients.cpp's and
// pb_charges.cpp's); pb_pipeline.cu with it, as pb_multigrid.cu, whose solver it repeats.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/pb/pb_device_ledger.cuh"
#include "src/pb/pb_pipeline_driver.h"
#include "src/pb_numerics/pb_pipeline_math.h"

namespace espgrid::cuda::pipeline {

using lean::Ledger;
using lean::Tracked;

/// The atoms in device memory.
struct DeviceAtoms {
  long count = 0;
  Tracked<double> x, y, z, radius, charge;
  pb::AtomArrays view() const { return {count, x.get(), y.get(), z.get(), radius.get(), charge.get()}; }
};
DeviceAtoms upload_atoms(Ledger& ledger, const pb::AtomArrays& host, cudaStream_t stream);

/// Atoms sorted by a bin key (ascending atom index within a bin) and each bin's first entry.
struct Bins {
  Tracked<unsigned> start;  ///< bins + 1 entries
  Tracked<int> atoms;
};
/// The SAS search's cells (geometry from `cells`, lists filled).
Bins bin_atoms(Ledger& ledger, const pb::AtomCells& cells, const pb::AtomArrays& atoms, cudaStream_t stream);
/// The charge bins (geometry from `bins`).
Bins bin_atoms(Ledger& ledger, const pb::ChargeBins& bins, const pb::AtomArrays& atoms, cudaStream_t stream);

/// Every atom's SAS neighbours, closest first (CSR).
struct Neighbours {
  Tracked<long long> start;  ///< atoms + 1 entries
  Tracked<int> list;
  std::size_t pairs = 0;
};
/// Atoms that cannot reach `window`'s planes (pb::reaches_window) get empty lists.
Neighbours sas_neighbours(Ledger& ledger, const pb::AtomCells& cells, const pb::AtomArrays& atoms, double probe,
                          const pb::SurfaceBytes& window, cudaStream_t stream);

/// The heights, Å, of the atoms whose open SAS points a slab counts (each atom counted by one slab).
struct CountedHeights {
  double lo, hi;  ///< lo ≤ z < hi
};

/// The mol/smol surface's face bytes and ion-accessibility bytes, carved by the open SAS points.
struct SurfaceBytes {
  Tracked<unsigned char> solute[3], accessible;
  Tracked<double> reference[3];  ///< the reference sphere, kept until the carving has run
  pb::SurfaceBytes view{};
};
/// Builds them over `window`'s planes (its n, origin, h, k_first, k_count; arrays ignored), returning
/// once the kernels are queued (free only after the stream has run them); `open_points` (device)
/// counts the open SAS points of the atoms at heights `counted`.
SurfaceBytes build_surface_bytes(Ledger& ledger, const PbPipelineInput& in, const pb::AtomArrays& atoms,
                                 const Neighbours& neighbours, const pb::SurfaceBytes& window, CountedHeights counted,
                                 unsigned long long* open_points, cudaStream_t stream);
/// Writes the codes (pb::node_code) of planes first .. first + planes − 1, plane `first` at codes[0].
void write_codes(const pb::SurfaceBytes& bytes, bool smooth, bool salt, long first, long planes, std::uint32_t* codes,
                 cudaStream_t stream);
/// Writes the spread charges, e (pb::gathered_charge), of planes first .. first + planes − 1.
void gather_charges(const pb::ChargeBins& bins, const pb::AtomArrays& atoms, long first, long planes, double* out,
                    cudaStream_t stream);

}  // namespace espgrid::cuda::pipeline
