// scan / shared helper kernels of scan-then-propagate: plumbing, not a lesson.
// Every scan-then-propagate variant scans each tile on its own; these two helpers then make the
// scan global, level by level (plan "propagate" in gpuprof/families/scan.py): totals gathers the
// last inclusive value of every full tile, the plan scans those totals with the same three kernels
// (recursively, until one tile holds them), and add adds to each tile the scanned total of all
// tiles before it. Each variant includes this header and declares its own extern "C" entry points
// (named in its manifest's `helpers`) that call these templates with its TILE.
#pragma once

// totals[b] = y[(b + 1) * Tile - 1] for b < count (= tiles - 1: the last tile's total is no offset).
template <int Tile>
__device__ __forceinline__ void scan_propagate_totals(const float* __restrict__ y, float* __restrict__ totals, int count) {
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < count) totals[b] = y[(long long)(b + 1) * Tile - 1];
}

// y[i] += offsets[b - 1] for i in tile b >= 1; block k of the grid handles tile k + 1.
template <int Tile>
__device__ __forceinline__ void scan_propagate_add(float* __restrict__ y, const float* __restrict__ offsets, int n) {
    static_assert(Tile % 4 == 0, "add updates float4s: the tile must be a multiple of 4");
    const long long base = (long long)(blockIdx.x + 1) * Tile;
    const float off = offsets[blockIdx.x];
    for (int j = 4 * threadIdx.x; j < Tile; j += 4 * blockDim.x) {
        const long long i = base + j;
        if (i + 4 <= n) {
            float4 v = *reinterpret_cast<float4*>(y + i);
            v.x += off;
            v.y += off;
            v.z += off;
            v.w += off;
            *reinterpret_cast<float4*>(y + i) = v;
        } else {
            for (long long k = i; k < n; ++k) y[k] += off;  // the ragged end of the last tile
        }
    }
}
