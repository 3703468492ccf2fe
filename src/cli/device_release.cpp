// release_devices_beside (commands.h): in the verbs' library, not main.cpp, because the CLI
// fuzzer (fuzz/fuzz_cli.cpp) links the verbs without main.
#include <future>
#include <utility>
#include <vector>

#include "src/cli/commands.h"
#include "src/compute/cuda_driver.h"
#include "src/core/switches.h"

namespace espgrid::cli {

std::future<void> release_devices_beside(std::vector<int> devices) {
  if (switched_off("ESPGRID_EARLY_RELEASE")) return {};
  return std::async(std::launch::async, [devices = std::move(devices)] {
    for (const int device : devices) cuda::release_device(device);
  });
}

}  // namespace espgrid::cli
