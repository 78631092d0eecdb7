// gemm_bf16 / elem.cuh: the rungs' 16-bit element type, a compile-time choice. BF16 by default;
// -DGEMM_ELEM_FP16 (the gemm_fp16 family's manifest defines it) builds the same rungs for FP16:
// __half in memory and the .f16 PTX types in mma.sync and wgmma (ELEM_PTX, spliced into the
// instruction strings). Both are 16 bits wide, so every tile, swizzle and TMA box is unchanged.
#pragma once

#if GEMM_ELEM_FP16  // 0 or undefined: BF16
#include <cuda_fp16.h>
typedef __half elem_t;
typedef __half2 elem2_t;
#define ELEM_PTX "f16"
static __device__ __forceinline__ float elem_to_float(elem_t x) { return __half2float(x); }
static __device__ __forceinline__ elem_t float_to_elem(float x) { return __float2half_rn(x); }
// .x (low half) = lo, .y = hi, each rounded to nearest even
static __device__ __forceinline__ elem2_t floats_to_elem2(float lo, float hi) { return __floats2half2_rn(lo, hi); }
#else
#include <cuda_bf16.h>
typedef __nv_bfloat16 elem_t;
typedef __nv_bfloat162 elem2_t;
#define ELEM_PTX "bf16"
static __device__ __forceinline__ float elem_to_float(elem_t x) { return __bfloat162float(x); }
static __device__ __forceinline__ elem_t float_to_elem(float x) { return __float2bfloat16_rn(x); }
static __device__ __forceinline__ elem2_t floats_to_elem2(float lo, float hi) { return __floats2bfloat162_rn(lo, hi); }
#endif
