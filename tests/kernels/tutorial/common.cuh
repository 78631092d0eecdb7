// Shared by the tutorial-style kernels beside it: found through -I<this folder> by NVRTC and nvcc alike.
#pragma once

#define CEIL_DIV(M, N) (((M) + (N) - 1) / (N))
