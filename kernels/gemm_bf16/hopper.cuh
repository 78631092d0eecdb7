// gemm_bf16 / hopper.cuh: the Hopper (sm_90a) plumbing the TMA + wgmma rungs share (gemm_bf16/wgmma,
// attention_bf16/fa3): the TMA tensor map type, mbarriers, tile loads by the copy engine, the 128B-swizzled
// shared-memory matrix descriptor, the wgmma fences, and setmaxnreg. The MMA wrappers of each shape stay
// beside the kernel that issues them.
#pragma once

// The driver's CUtensorMap (cuda.h), opaque: 128 bytes, 64-byte aligned, passed by value.
struct alignas(64) TensorMap { unsigned long long opaque[16]; };

static __device__ __forceinline__ unsigned smem_u32(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// ---- mbarrier --------------------------------------------------------------------------------
static __device__ __forceinline__ void mbar_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
static __device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes)  // arrive + expect bytes
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
static __device__ __forceinline__ void mbar_arrive(unsigned bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Returns once the phase of parity `parity` has completed (the barrier's current phase differs).
static __device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity)
{
    asm volatile(
        "{\n"
        ".reg .pred done;\n"
        "WAIT_%=:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT_%=;\n"
        "}\n" ::"r"(bar), "r"(parity) : "memory");
}

// ---- TMA -------------------------------------------------------------------------------------
// 2-D tile load: box at (c0 = column / innermost, c1 = row) of the tensor map into shared memory,
// completing `bytes` of transaction count on `bar`.
static __device__ __forceinline__ void tma_load_2d(unsigned dst, const TensorMap* map, unsigned bar, int c0, int c1)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n"
        ::"r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(c0), "r"(c1) : "memory");
}

// ---- WGMMA -----------------------------------------------------------------------------------
// Shared-memory matrix descriptor, K-major with the 128-byte swizzle (cute::GmmaDescriptor):
// bits 0-13 start address >> 4, 16-29 leading byte offset >> 4 (unused when swizzled: 1),
// 32-45 stride byte offset >> 4 (8 rows × 128 B = 1024 between 8-row core-matrix groups),
// 49-51 base offset (0: tiles are 1024-byte aligned), 62-63 layout (1 = 128B swizzle).
static __device__ __forceinline__ unsigned long long smem_desc(unsigned addr)
{
    return (static_cast<unsigned long long>((addr & 0x3FFFF) >> 4))
         | (1ull << 16)
         | (static_cast<unsigned long long>(1024 >> 4) << 32)
         | (1ull << 62);
}
// The same for an MN-major operand (read with trans = 1: B stored [K][N], N contiguous), 128B swizzle:
// each 128-byte row holds 64 consecutive N of one K, 8 K rows make a 1024-byte atom; the stride
// byte offset (1024) steps 8 K, the leading byte offset `lbo` steps to the next 64 N (the next
// 64-column slab of the tile), as cute's canonical GMMA MN-major SW128 layout.
static __device__ __forceinline__ unsigned long long smem_desc_mn(unsigned addr, unsigned lbo)
{
    return (static_cast<unsigned long long>((addr & 0x3FFFF) >> 4))
         | (static_cast<unsigned long long>((lbo & 0x3FFFF) >> 4) << 16)
         | (static_cast<unsigned long long>(1024 >> 4) << 32)
         | (1ull << 62);
}
static __device__ __forceinline__ void wgmma_fence()
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
static __device__ __forceinline__ void wgmma_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
static __device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accumulator reads/writes across a wgmma fence or wait.
template <int N>
static __device__ __forceinline__ void acc_fence(float (&d)[N])
{
#pragma unroll
    for (int i = 0; i < N; ++i)
        asm volatile("" : "+f"(d[i])::"memory");
}

template <int N>
static __device__ __forceinline__ void setmaxnreg_inc()
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
static __device__ __forceinline__ void setmaxnreg_dec()
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
