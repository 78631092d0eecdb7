// gemm_bf16 / mma_bf16.cuh: the tensor-core instruction and the output packing the mma.sync rungs share.
// Plumbing, not a lesson: mma_sync.cu and multistage.cu differ in how the fragments reach the
// registers (register-staged copies vs a cp.async pipeline), not in the MMA they issue.
#pragma once
#include "elem.cuh"  // elem_t: BF16, or FP16 under GEMM_ELEM_FP16

// D = A(16x16, row) * B(16x8, col) + D, BF16 inputs, FP32 accumulators.
static __device__ __forceinline__ void mma_16816(float* d, const unsigned* a, const unsigned* b)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." ELEM_PTX "." ELEM_PTX ".f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
static __device__ __forceinline__ unsigned pack_bf16x2(float lo, float hi)
{
    elem2_t p = floats_to_elem2(lo, hi);   // .x (low half) = lo, round to nearest even
    return *reinterpret_cast<unsigned*>(&p);
}
