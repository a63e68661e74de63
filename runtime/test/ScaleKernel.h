//===- ScaleKernel.h - a tiny kernel for the CUDA device's tests -*- C++
//-*-===//
//
// scale(float *x, float a, int n): x[i] *= a for i < n, as PTX that any
// driver compiles at load (CudaTest.cpp on a GPU; CudaGraphTest.cpp on a
// GPU or on the mock driver, which runs a kernel of that name on the host).
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_RUNTIME_TEST_SCALEKERNEL_H
#define ANVIL_RUNTIME_TEST_SCALEKERNEL_H

#include "anvil/runtime/Cuda.h"

#include <cstdint>

namespace anvil::test {

// scale(float *x, float a, int n): x[i] *= a for i < n (sm_80 PTX, which
// the driver compiles for the device at load).
inline constexpr const char *kScalePtx = R"(
.version 7.0
.target sm_80
.address_size 64
.visible .entry scale(
	.param .u64 scale_param_0,
	.param .f32 scale_param_1,
	.param .u32 scale_param_2
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<6>;
	.reg .f32 	%f<4>;
	.reg .b64 	%rd<5>;
	ld.param.u64 	%rd1, [scale_param_0];
	ld.param.f32 	%f1, [scale_param_1];
	ld.param.u32 	%r2, [scale_param_2];
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %tid.x;
	mad.lo.s32 	%r1, %r3, %r4, %r5;
	setp.ge.s32 	%p1, %r1, %r2;
	@%p1 bra 	DONE;
	cvta.to.global.u64 	%rd2, %rd1;
	mul.wide.s32 	%rd3, %r1, 4;
	add.s64 	%rd4, %rd2, %rd3;
	ld.global.f32 	%f2, [%rd4];
	mul.f32 	%f3, %f2, %f1;
	st.global.f32 	[%rd4], %f3;
DONE:
	ret;
}
)";

/// Launches scale on `x` (n floats, managed) with `blocks` x `threads`.
inline void launchScale(void *function, float *x, float a, int32_t n,
                        int64_t blocks, int64_t threads) {
  void *params[] = {&x, &a, &n};
  void *stream = mgpuStreamCreate();
  mgpuLaunchKernel(function, blocks, 1, 1, threads, 1, 1, 0, stream, params,
                   nullptr, 3);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);
}

} // namespace anvil::test

#endif // ANVIL_RUNTIME_TEST_SCALEKERNEL_H
