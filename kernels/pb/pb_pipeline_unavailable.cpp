// Stand-in for the device PB pipeline (kernels/pb/pb_pipeline.cu) in a build without CUDA.
#include <string>

#include "src/core/errors.h"
#include "src/pb/pb_pipeline_driver.h"

namespace espgrid::cuda {

void run_pb_pipeline(const PbPipelineInput&, PbPipelineResult&) {
  throw Error(std::string(kBuiltWithoutCuda) + ": the device PB pipeline is unavailable");
}

void pb_device_memory(int, std::size_t&, std::size_t&) {
  throw Error(std::string(kBuiltWithoutCuda) + ": there is no GPU memory to ask about");
}

std::size_t pb_device_total_memory(int) {
  throw Error(std::string(kBuiltWithoutCuda) + ": there is no GPU memory to ask about");
}

}  // namespace espgrid::cuda
