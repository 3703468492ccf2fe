#pragma once
// Allocations a third-party runtime makes and never frees (Open MPI's start and finish leave
// ~10 KB behind, partly in plugins it unloads, so LeakSanitizer cannot name or suppress them).
// Under LeakSanitizer this scope leaves what its thread allocates inside it out of the leak
// report; elsewhere it is nothing. Only MPI's start and finish are wrapped: our own code never
// runs inside one, so a leak of ours is still reported.

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define ESPGRID_HAVE_LSAN 1
#endif
#endif
#if !defined(ESPGRID_HAVE_LSAN) && (defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_LEAK__))
#define ESPGRID_HAVE_LSAN 1
#endif

#if ESPGRID_HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

namespace espgrid {

class ForeignAllocations {
 public:
#if ESPGRID_HAVE_LSAN
  ForeignAllocations() { __lsan_disable(); }
  ~ForeignAllocations() { __lsan_enable(); }
#else
  ForeignAllocations() = default;
#endif
  ForeignAllocations(const ForeignAllocations&) = delete;
  ForeignAllocations& operator=(const ForeignAllocations&) = delete;
};

}  // namespace espgrid
