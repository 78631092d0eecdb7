// The scan family's vendor row: cub::DeviceScan::InclusiveSum on float, from x into y, called from
// host code as a CUDA programmer would. Built by nvcc into a shared library on first use
// (gpuprof/families/_cub.py) and called through ctypes on gpuprof's timing stream.
#include <cstddef>
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>

extern "C" int gpuprof_cub_inclusive_sum_f32(int device, const float* x, float* y, int n, void* temp,
                                             size_t* temp_bytes, cudaStream_t stream) {
    cudaError_t status = cudaSetDevice(device);  // this library's runtime starts on device 0
    if (status != cudaSuccess) return static_cast<int>(status);
    // temp == nullptr: only the workspace size is written to *temp_bytes (CUB's two-call convention).
    return static_cast<int>(cub::DeviceScan::InclusiveSum(temp, *temp_bytes, x, y, n, stream));
}
