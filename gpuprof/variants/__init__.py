"""What a variant is and how it is launched: the catalogue, sizes and geometry, student and Triton variants,
NVRTC compile, NVTX ranges."""
