// The one table of kernel variants. The CLI's --kernel, `espgrid kernels`, `espgrid verify`,
// the library facade, the tests and the benchmarks all iterate it and decide by the entries'
// capabilities, never by a kernel's name: a new variant is one kernel plus one entry
// (docs/ARCHITECTURE.md has the checklist).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "src/compute/kernel_variant.h"

namespace espgrid {

std::span<const KernelVariant> kernel_variants();
/// The named variant; UsageError listing the valid names when there is none.
const KernelVariant& find_kernel(std::string_view name);
/// The backend's default variant (role Default).
const KernelVariant& default_kernel(Backend backend);
/// The backend's approximate variant for `model` (the one `--accuracy` chooses); UsageError
/// when the backend has none that computes the model.
const KernelVariant& approximate_kernel(Backend backend, PairModel model);
/// The variant every other is verified against (role Reference).
const KernelVariant& reference_kernel();
/// The reference's values computed fast: a parallel CPU variant whose maps are bit for bit the
/// reference's (Reproducibility::MatchesReference), or the reference itself when there is none.
const KernelVariant& fast_reference_kernel();
/// True when CUDA variants can run here; otherwise `reason` says why not.
bool cuda_available(std::string* reason = nullptr);
std::string_view backend_name(Backend backend);
/// "cpu-reference, cpu-parallel" for messages: the variants that compute `model`.
std::string variants_supporting(PairModel model);

}  // namespace espgrid
