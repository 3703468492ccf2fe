// Transparent huge pages for the PB grids' memory. A PB solve allocates and first touches
// 100-200 bytes a grid point (coefficient maps, the system, the multigrid hierarchy, hypre's
// copies); with 4 KiB pages every first touch is a page fault, which on the 2-core VM of
// docs/apbs.md cost more than the solve (APBS's pka-lig example 3.7 -> 2.5 s, PDB2PQR's template for
// the actin dimer 14.8 -> 7.0 s with 2 MiB pages). Most Linux hosts run transparent huge pages in
// `madvise` mode, where only memory marked for them gets them; glibc's malloc marks its blocks when
// the tunable glibc.malloc.hugetlb=1 is set, and glibc reads tunables only when a program starts.
// So `espgrid apbs` and `espgrid map --model pb` start themselves again once with it set.
#pragma once

#include <string>
#include <string_view>

namespace espgrid {

/// What decides the restart, read from the process and the host (tests give their own).
struct HugePageHost {
  bool glibc_has_tunable = false;  ///< glibc >= 2.35 (glibc.malloc.hugetlb exists)
  std::string thp_mode;            ///< the bracketed word of /sys/kernel/mm/transparent_hugepage/enabled
  bool tunables_set = false;       ///< GLIBC_TUNABLES is set: the user chose, nothing is changed
  bool switched_off = false;       ///< ESPGRID_HUGE_PAGES=0 (or off, no: src/core/switches.h)
};
HugePageHost this_host_for_huge_pages();

/// Whether a run with these arguments (argv[1] the verb) should restart with the tunable: the verbs
/// that solve PB (`apbs`, `map --model pb`), glibc with the tunable, THP in `madvise` mode (with
/// `always` every large block gets huge pages already; with `never` none can), the user's
/// GLIBC_TUNABLES untouched, and not switched off by ESPGRID_HUGE_PAGES=0.
bool restart_for_huge_pages(const HugePageHost& host, int argc, const char* const* argv);

/// Restarts the program (/proc/self/exe, the same arguments) with GLIBC_TUNABLES=glibc.malloc.hugetlb=1
/// when restart_for_huge_pages says so; returns when it does not (or when exec fails: the run goes
/// on with 4 KiB pages). In the restarted process it removes the variable again, so that child
/// programs (pdb2pqr, mpirun's) start with the user's environment. Call first thing in main.
void restart_with_huge_pages_if_useful(int argc, char** argv) noexcept;

}  // namespace espgrid
