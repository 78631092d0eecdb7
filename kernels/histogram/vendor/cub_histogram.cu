// The histogram family's vendor row: cub::DeviceHistogram::HistogramEven called the way a CUDA
// programmer would call it for byte samples: uint8 samples, 257 integer levels over [0, 256) (one
// bin per byte value) and 32-bit counters. Host code, so it is built by nvcc into a shared library
// (gpuprof/tools/nvcc_library.py) and called through ctypes on gpuprof's timing stream.
#include <cstddef>
#include <cub/device/device_histogram.cuh>
#include <cuda_runtime.h>

extern "C" int gpuprof_cub_histogram_even_u8(int device, const unsigned char* samples, unsigned int* bins, int n,
                                             void* temp, size_t* temp_bytes, cudaStream_t stream) {
    cudaError_t status = cudaSetDevice(device);  // this library's runtime starts on device 0
    if (status != cudaSuccess) return static_cast<int>(status);
    // temp == nullptr: only the workspace size is written to *temp_bytes (CUB's two-call convention).
    status = cub::DeviceHistogram::HistogramEven(temp, *temp_bytes, samples, bins, 257, 0, 256, n, stream);
    return static_cast<int>(status);
}
