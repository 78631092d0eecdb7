// gpuprof timing harness kernels: never timed themselves, they set up each timed launch.

// Holds the stream until the host has queued a whole batch of samples, so no timed launch
// waits on the host (a start event recorded on an idle GPU would count the launch latency).
// Gives up after timeout_ns so a stuck host cannot hang the GPU; *timed_out tells the host.
extern "C" __global__ void gpuprof_block_until_released(const volatile int* release, int* timed_out,
                                                       unsigned long long timeout_ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        if (*release != 0) {
            return;
        }
        __nanosleep(1000);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < timeout_ns);
    *timed_out = 1;
}

// Measures the SM clock: SM cycles (clock64) against nanoseconds (globaltimer) over a spin
// of spin_ns. out[0] = cycles, out[1] = nanoseconds.
// Both ends are aligned to a globaltimer tick: the timer advances in steps (up to 1 us on some
// GPUs), so the first loop waits for a step and the spin ends on the first read past spin_ns,
// which is also just after a step. clock64 is read right after each of those reads, so both
// ends carry the same read latency and it cancels. (Reading clock64 before the first timer read
// and after the last one, as an earlier version did, counted cycles over a longer span than the
// nanoseconds: it read ~0.5 % above the maximum clock.)
extern "C" __global__ void gpuprof_clock_probe(unsigned long long* out, unsigned long long spin_ns) {
    unsigned long long before, t0, t1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(before));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    } while (t0 == before);
    long long c0 = clock64();
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    } while (t1 - t0 < spin_ns);
    long long c1 = clock64();
    out[0] = (unsigned long long)(c1 - c0);
    out[1] = t1 - t0;
}

// Evicts the L2 by READING a buffer larger than it. A write-based flush (memset) leaves the L2
// full of dirty lines that the timed kernel then pays to write back; read lines are clean and
// are dropped for free, which is what ncu's cache flush gives too.
extern "C" __global__ void gpuprof_flush_l2(const uint4* __restrict__ buffer, long long count, int* sink) {
    uint4 acc = make_uint4(0, 0, 0, 0);
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
        uint4 v = __ldcg(buffer + i);  // cache in L2 only: the point is to fill L2
        acc.x ^= v.x; acc.y ^= v.y; acc.z ^= v.z; acc.w ^= v.w;
    }
    // Never true for the buffer's contents (0x5A bytes everywhere XOR to 0 or 0x5A5A5A5A);
    // keeps the loads alive without writing anything.
    if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x12345678u) {
        *sink = 1;
    }
}
