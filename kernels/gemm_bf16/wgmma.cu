// gemm_bf16 / wgmma
// Hopper (sm_90a) warp-specialised TMA + WGMMA GEMM, C = A·Bᵀ in BF16 with FP32 accumulation
// (A: M×K, B: N×K, both row-major = K-major, C: M×N row-major). Block tile BM×BN×BK = 128×256×64
// in STAGES shared-memory stages written by the Tensor Memory Accelerator with the 128-byte
// swizzle. Three warpgroups: warpgroup 0 is the producer (one elected thread waits on each
// stage's "empty" mbarrier, then issues the two cp.async.bulk.tensor loads that complete the
// stage's "full" mbarrier by transaction bytes; setmaxnreg gives its registers away), warpgroups
// 1 and 2 are the consumers (each 64×256 of C with wgmma.mma_async m64n256k16, A and B read from
// shared memory through matrix descriptors, 128 FP32 accumulators per thread; the wgmma of stage
// s is retired with wait_group 1 while stage s+1's is in flight, then s is released to the
// producer). Persistent when launched with fewer blocks than tiles: each block walks the tiles
// blockIdx, blockIdx + gridDim, ... in GROUP_M-grouped order (L2 reuse), and the producer runs
// ahead into the next tile while the consumers store the last one (RN-even BF16 pairs from
// registers). Any grid size is correct: (N/BN, M/BM) is one tile per block, (SMs, 1) persistent.
// Requires M % 128 == 0, N % 256 == 0, K % 64 == 0 (the tensor maps have no partial boxes).
// Host: tmA = tensor map of A (rows M, cols K, box 64 cols × 128 rows), tmB = of B (rows N,
// cols K, box 64 × 256), both BF16, 128B swizzle; dynamic shared memory = SMEM_BYTES.
// Expected limiter: tensor-core issue (HGMMA, ~75% of the BF16 dense peak: ~730 TFLOP/s at 8192³ on
// an H200, 1.0-1.05× cuBLAS), then the pipeline fill and the register-store epilogue at each tile,
// which the MMAs do not overlap (one block per SM: 193 KB of shared memory).

#include "elem.cuh"  // elem_t: BF16, or FP16 under GEMM_ELEM_FP16

#include "hopper.cuh"  // TMA, mbarriers, descriptors, wgmma fences, setmaxnreg

#ifndef STAGES
#define STAGES 4          // shared-memory pipeline depth (48 KB per stage: 16 KB of A, 32 KB of B)
#endif
#ifndef GROUP_M
#define GROUP_M 16        // tile rows walked together before moving along N (L2 reuse of B)
#endif
#ifndef PRODUCER_REGS
#define PRODUCER_REGS 40  // setmaxnreg.dec target of the producer warpgroup
#endif
#ifndef CONSUMER_REGS
#define CONSUMER_REGS 232 // setmaxnreg.inc target of the consumer warpgroups
#endif

#define BM 128            // two consumer warpgroups × wgmma M = 64
#define BN 256            // the wgmma N of m64n256k16
#define BK 64             // one 128-byte swizzle atom of BF16 along K
#define WG_M 64
#define NUM_CONSUMERS (BM / WG_M)
#define NUM_THREADS (128 * (NUM_CONSUMERS + 1))
#define A_STAGE_BYTES (BM * BK * 2)
#define B_STAGE_BYTES (BN * BK * 2)
#define STAGE_BYTES (A_STAGE_BYTES + B_STAGE_BYTES)
#define SMEM_ALIGN 1024   // the 128B swizzle pattern repeats every 8 rows × 128 B; tiles start on it
#define SMEM_BYTES (STAGES * STAGE_BYTES + SMEM_ALIGN)  // = the launch's dynamic shared memory
#define MAX_SMEM_OPTIN (227 * 1024)

static_assert(BK * 2 == 128, "BK must span exactly one 128-byte swizzle row");
static_assert(BN == 256 && WG_M == 64, "the MMA is wgmma m64n256k16");
static_assert(NUM_CONSUMERS == 2, "two consumer warpgroups (BM = 128)");
static_assert(STAGES >= 2, "the pipeline needs at least two stages");
static_assert(A_STAGE_BYTES % SMEM_ALIGN == 0 && B_STAGE_BYTES % SMEM_ALIGN == 0, "stages keep 1024-byte alignment");
static_assert(SMEM_BYTES <= MAX_SMEM_OPTIN, "STAGES stages must fit in 227 KB of dynamic shared memory");
static_assert(GROUP_M >= 1, "GROUP_M must be positive");
static_assert(PRODUCER_REGS % 8 == 0 && CONSUMER_REGS % 8 == 0 && PRODUCER_REGS >= 24 && CONSUMER_REGS <= 256,
              "setmaxnreg counts are multiples of 8 in [24, 256]");
static_assert(128 * PRODUCER_REGS + 128 * NUM_CONSUMERS * CONSUMER_REGS <= 65536,
              "the warpgroups' registers must fit the 64K-register file");

// D[64×256] += A[64×16] · B[256×16]ᵀ, both operands K-major in shared memory (trans-a = trans-b = 0).
static __device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], unsigned long long da, unsigned long long db)
{
    asm volatile(
        "{\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32." ELEM_PTX "." ELEM_PTX " "
        "{"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
        "%128, %129, 1, 1, 1, 0, 0;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(da), "l"(db));
}

// Tile t of (M/BM) × (N/BN) in GROUP_M-grouped order: GROUP_M tile rows, column by column.
static __device__ __forceinline__ void tile_coords(int t, int tilesM, int tilesN, int& tm, int& tn)
{
    const int perGroup = GROUP_M * tilesN;
    const int group = t / perGroup;
    const int firstM = group * GROUP_M;
    const int rows = min(tilesM - firstM, GROUP_M);
    const int inGroup = t - group * perGroup;
    tm = firstM + inGroup % rows;
    tn = inGroup / rows;
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS, 1)
gemm_bf16_wgmma(const __grid_constant__ TensorMap tmA, const __grid_constant__ TensorMap tmB,
                elem_t* __restrict__ C, int M, int N, int K)
{
    extern __shared__ unsigned char smemRaw[];
    __shared__ __align__(8) unsigned long long fullBar[STAGES];   // TMA bytes landed in stage s
    __shared__ __align__(8) unsigned long long emptyBar[STAGES];  // consumers done reading stage s

    // Stage s: A tile (BM rows × 128 B) at base + s*STAGE_BYTES, B tile (BN rows × 128 B) after it.
    const unsigned base = (smem_u32(smemRaw) + (SMEM_ALIGN - 1)) & ~unsigned(SMEM_ALIGN - 1);
    const int wg = threadIdx.x / 128;
    const int tid = threadIdx.x % 128;

    if (threadIdx.x == 0) {
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(smem_u32(&fullBar[s]), 1);                         // the producer's expect_tx
            mbar_init(smem_u32(&emptyBar[s]), NUM_CONSUMERS * 128);      // every consumer thread
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    }
    __syncthreads();

    const int tilesM = M / BM, tilesN = N / BN, numTiles = tilesM * tilesN;
    const int kTiles = K / BK;
    const int firstTile = blockIdx.y * gridDim.x + blockIdx.x;
    const int tileStep = gridDim.x * gridDim.y;

    if (wg == 0) {
        // ---- producer --------------------------------------------------------------------
        setmaxnreg_dec<PRODUCER_REGS>();
        if (tid == 0) {
            int stage = 0;
            unsigned phase = 0;
            for (int t = firstTile; t < numTiles; t += tileStep) {
                int tm, tn;
                tile_coords(t, tilesM, tilesN, tm, tn);
                for (int kt = 0; kt < kTiles; ++kt) {
                    mbar_wait(smem_u32(&emptyBar[stage]), phase ^ 1);   // first pass: free at once
                    const unsigned full = smem_u32(&fullBar[stage]);
                    const unsigned sA = base + stage * STAGE_BYTES;
                    mbar_expect_tx(full, STAGE_BYTES);
                    tma_load_2d(sA, &tmA, full, kt * BK, tm * BM);
                    tma_load_2d(sA + A_STAGE_BYTES, &tmB, full, kt * BK, tn * BN);
                    if (++stage == STAGES) { stage = 0; phase ^= 1; }
                }
            }
        }
        return;
    }

    // ---- consumers ---------------------------------------------------------------------------
    setmaxnreg_inc<CONSUMER_REGS>();
    const int cw = wg - 1;           // this warpgroup's 64 rows of the block tile
    const int warp = tid / 32, lane = tid % 32;
    int stage = 0;
    unsigned phase = 0;
    float d[128];

    for (int t = firstTile; t < numTiles; t += tileStep) {
        int tm, tn;
        tile_coords(t, tilesM, tilesN, tm, tn);
#pragma unroll
        for (int i = 0; i < 128; ++i)
            d[i] = 0.0f;

        int prevStage = -1;
        for (int kt = 0; kt < kTiles; ++kt) {
            mbar_wait(smem_u32(&fullBar[stage]), phase);
            const unsigned sA = base + stage * STAGE_BYTES + cw * (WG_M * BK * 2);
            const unsigned sB = base + stage * STAGE_BYTES + A_STAGE_BYTES;
            wgmma_fence();
            acc_fence(d);
#pragma unroll
            for (int k = 0; k < BK / 16; ++k)        // +32 bytes per 16 K inside the swizzled row
                wgmma_m64n256k16(d, smem_desc(sA + k * 32), smem_desc(sB + k * 32));
            wgmma_commit();
            acc_fence(d);
            wgmma_wait<1>();                         // the previous stage's MMAs are done ...
            acc_fence(d);
            if (prevStage >= 0)
                mbar_arrive(smem_u32(&emptyBar[prevStage]));   // ... so hand it back
            prevStage = stage;
            if (++stage == STAGES) { stage = 0; phase ^= 1; }
        }
        wgmma_wait<0>();
        acc_fence(d);
        if (prevStage >= 0)
            mbar_arrive(smem_u32(&emptyBar[prevStage]));

        // Epilogue: D fragment of m64nNk16 — row 16*warp + lane/4 (+8 for d[4j+2], d[4j+3]),
        // column 8*j + 2*(lane%4) (+1): one bf16x2 store per pair.
        const int row = tm * BM + cw * WG_M + warp * 16 + lane / 4;
        const int col = tn * BN + 2 * (lane % 4);
        elem_t* c0 = C + static_cast<size_t>(row) * N + col;
        elem_t* c8 = c0 + static_cast<size_t>(8) * N;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
            *reinterpret_cast<elem2_t*>(c0 + 8 * j) = floats_to_elem2(d[4 * j], d[4 * j + 1]);
            *reinterpret_cast<elem2_t*>(c8 + 8 * j) = floats_to_elem2(d[4 * j + 2], d[4 * j + 3]);
        }
    }
}
