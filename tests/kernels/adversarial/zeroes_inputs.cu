// vecadd / zeroes_inputs — deliberately dishonest: zeroes a and b and writes c = 0, which equals
// a + b of the zeroed inputs. A reference computed after the launch from the same buffers would
// call it exact; the reference from the pristine copy and the input comparison do not.
extern "C" __global__ void vecadd_zeroes_inputs(const float* __restrict__ a, const float* __restrict__ b,
                                                float* __restrict__ c, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const_cast<float*>(a)[i] = 0.0f;
        const_cast<float*>(b)[i] = 0.0f;
        c[i] = 0.0f;
    }
}
