// scan / lookback.cuh: the single-pass scans' shared state and look-back (decoupled_lookback,
// pipelined_lookback): status words, publish and read, warp scans, and the look-back itself.
// Included after TILE is defined (the status array is sized by it).
#pragma once

// Workspace: one status word per tile and the tile counter. The family signature (x, y, n) has no
// workspace argument, so they live in the module (allocated at load, outside any timing), sized
// for the largest n (2^31 - 1); the _reset kernel zeroes the used part before every scan.
#define MAX_TILES (2147483647 / TILE + 1)
__device__ unsigned long long g_status[MAX_TILES];  // (flag << 32) | float bits of the value
__device__ unsigned int g_tile_counter;

#define FLAG_INVALID 0u    // nothing published yet
#define FLAG_AGGREGATE 1u  // value = this tile's own sum
#define FLAG_INCLUSIVE 2u  // value = sum of all tiles up to and including this one

__device__ __forceinline__ void publish(int tile, unsigned flag, float value) {
    const unsigned long long word = ((unsigned long long)flag << 32) | __float_as_uint(value);
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(g_status + tile), "l"(word) : "memory");
}

__device__ __forceinline__ unsigned long long status_of(int tile) {
    unsigned long long word;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(word) : "l"(g_status + tile) : "memory");
    return word;
}

__device__ __forceinline__ float warp_inclusive(float v, int lane) {
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        const float u = __shfl_up_sync(0xffffffffu, v, off);
        if (lane >= off) v += u;
    }
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

// Sum of all tiles before `tile`, by one warp: lane l watches tile (last - l). Wait until all 32 have
// published something, add the aggregates up to the nearest inclusive prefix; if none of the 32 had
// one, slide the window 32 tiles back. Predecessors started earlier (counter order) and never wait
// on later tiles, so this terminates whatever order the hardware schedules blocks in.
__device__ __forceinline__ float look_back(int tile, int lane) {
    float prefix = 0.f;
    for (int last = tile - 1;; last -= 32) {
        const int pred = last - lane;
        unsigned long long word;
        unsigned flag;
        do {
            word = pred >= 0 ? status_of(pred) : ((unsigned long long)FLAG_INCLUSIVE << 32);  // before tile 0: 0
            flag = (unsigned)(word >> 32);
        } while (__any_sync(0xffffffffu, flag == FLAG_INVALID));
        const unsigned inclusive = __ballot_sync(0xffffffffu, flag == FLAG_INCLUSIVE);
        const int stop = inclusive ? __ffs(inclusive) - 1 : 31;  // nearest lane with an inclusive prefix
        prefix += warp_sum(lane <= stop ? __uint_as_float((unsigned)word) : 0.f);
        if (inclusive) return prefix;
    }
}
