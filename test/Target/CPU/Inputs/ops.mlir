// Ops compiled for the CPU and compared with the interpreter by
// ../ops-cpu.test (run_ops.py). Shapes are odd on purpose; comments before
// a function set its tolerance and input ranges (see run_ops.py).

func.func @arith(%a: tensor<3x7xf32>, %b: tensor<3x7xf32>) -> (tensor<3x7xf32>, tensor<3x7xf32>, tensor<3x7xf32>, tensor<3x7xf32>, tensor<3x7xf32>, tensor<3x7xf32>, tensor<3x7xf32>) {
  %0 = anvil.add %a, %b : tensor<3x7xf32>
  %1 = anvil.sub %a, %b : tensor<3x7xf32>
  %2 = anvil.mul %a, %b : tensor<3x7xf32>
  %3 = anvil.div %a, %b : tensor<3x7xf32>
  %4 = anvil.max %a, %b : tensor<3x7xf32>
  %5 = anvil.min %a, %b : tensor<3x7xf32>
  %6 = anvil.neg %a : tensor<3x7xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<3x7xf32>, tensor<3x7xf32>, tensor<3x7xf32>, tensor<3x7xf32>, tensor<3x7xf32>, tensor<3x7xf32>, tensor<3x7xf32>
}

// positive
func.func @math_positive(%a: tensor<5x3xf32>, %b: tensor<5x3xf32>) -> (tensor<5x3xf32>, tensor<5x3xf32>, tensor<5x3xf32>, tensor<5x3xf32>) {
  %0 = anvil.log %a : tensor<5x3xf32>
  %1 = anvil.sqrt %a : tensor<5x3xf32>
  %2 = anvil.rsqrt %a : tensor<5x3xf32>
  %3 = anvil.pow %a, %b : tensor<5x3xf32>
  return %0, %1, %2, %3 : tensor<5x3xf32>, tensor<5x3xf32>, tensor<5x3xf32>, tensor<5x3xf32>
}

func.func @math(%a: tensor<11xf32>) -> (tensor<11xf32>, tensor<11xf32>, tensor<11xf32>, tensor<11xf32>, tensor<11xf32>, tensor<11xf32>, tensor<11xf32>, tensor<11xf32>, tensor<11xf32>, tensor<11xf32>, tensor<11xf32>, tensor<11xf32>) {
  %0 = anvil.exp %a : tensor<11xf32>
  %1 = anvil.tanh %a : tensor<11xf32>
  %2 = anvil.cos %a : tensor<11xf32>
  %3 = anvil.sin %a : tensor<11xf32>
  %4 = anvil.erf %a : tensor<11xf32>
  %5 = anvil.sigmoid %a : tensor<11xf32>
  %6 = anvil.silu %a : tensor<11xf32>
  %7 = anvil.relu %a : tensor<11xf32>
  %8 = anvil.gelu erf %a : tensor<11xf32>
  %9 = anvil.gelu tanh %a : tensor<11xf32>
  %10 = anvil.abs %a : tensor<11xf32>
  %11 = anvil.stop_gradient %a : tensor<11xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11 : tensor<11xf32>, tensor<11xf32>, tensor<11xf32>, tensor<11xf32>, tensor<11xf32>, tensor<11xf32>, tensor<11xf32>, tensor<11xf32>, tensor<11xf32>, tensor<11xf32>, tensor<11xf32>, tensor<11xf32>
}

// int-high: 9
func.func @compare_select_cast(%a: tensor<4x5xf32>, %b: tensor<4x5xf32>, %i: tensor<4x5xi32>, %j: tensor<4x5xi32>) -> (tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xi32>, tensor<4x5xf32>, tensor<4x5xi32>, tensor<4x5xi32>) {
  %m = anvil.compare lt, %a, %b : tensor<4x5xf32>
  %0 = anvil.select %m, %a, %b : tensor<4x5xf32>
  %n = anvil.compare ge, %i, %j : tensor<4x5xi32>
  %1 = anvil.cast %n : tensor<4x5xi1> to tensor<4x5xf32>
  %2 = anvil.cast %a : tensor<4x5xf32> to tensor<4x5xi32>
  %3 = anvil.cast %i : tensor<4x5xi32> to tensor<4x5xf32>
  %4 = anvil.div %i, %j : tensor<4x5xi32>
  %5 = anvil.mul %i, %j : tensor<4x5xi32>
  return %0, %1, %2, %3, %4, %5 : tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xi32>, tensor<4x5xf32>, tensor<4x5xi32>, tensor<4x5xi32>
}

func.func @movement(%a: tensor<2x3x5xf32>, %b: tensor<2x4x5xf32>, %c: tensor<1x5xf32>) -> (tensor<5x2x3xf32>, tensor<6x5xf32>, tensor<3x10xf32>, tensor<2x7x5xf32>, tensor<1x2x3xf32>, tensor<2x1x5xf32>, tensor<2x2x5xf32>, tensor<4x6x5xf32>, tensor<3x2x5xf32>) {
  %0 = anvil.transpose %a, [2, 0, 1] : tensor<2x3x5xf32> -> tensor<5x2x3xf32>
  %1 = anvil.reshape %a : tensor<2x3x5xf32> -> tensor<6x5xf32>
  %2 = anvil.reshape %a : tensor<2x3x5xf32> -> tensor<3x10xf32>
  %3 = anvil.concat %a, %b dim = 1 : (tensor<2x3x5xf32>, tensor<2x4x5xf32>) -> tensor<2x7x5xf32>
  %4 = anvil.slice %a [1:2:1, 0:3:1, 0:5:2] : tensor<2x3x5xf32> -> tensor<1x3x3xf32>
  %5 = anvil.reshape %4 : tensor<1x3x3xf32> -> tensor<1x9xf32>
  %6 = anvil.slice %5 [0:1:1, 1:7:3] : tensor<1x9xf32> -> tensor<1x2xf32>
  %7 = anvil.broadcast %6, dims = [0, 1] : tensor<1x2xf32> -> tensor<1x2xf32>
  %8 = anvil.broadcast %c, dims = [1, 2] : tensor<1x5xf32> -> tensor<2x1x5xf32>
  %s:2 = anvil.split %b dim = 1 sizes [2, 2] : tensor<2x4x5xf32> -> tensor<2x2x5xf32>, tensor<2x2x5xf32>
  %9 = anvil.sub %s#0, %s#1 : tensor<2x2x5xf32>
  %10 = anvil.pad %b low [1, 1, 0] high [1, 1, 0] {value = -2.5 : f64} : tensor<2x4x5xf32> -> tensor<4x6x5xf32>
  %11 = anvil.broadcast %c, dims = [1, 2] : tensor<1x5xf32> -> tensor<3x2x5xf32>
  %12 = anvil.reshape %7 : tensor<1x2xf32> -> tensor<1x2xf32>
  %13 = anvil.broadcast %12, dims = [1, 2] : tensor<1x2xf32> -> tensor<1x1x2xf32>
  %14 = anvil.concat %13, %13, %13 dim = 2 : (tensor<1x1x2xf32>, tensor<1x1x2xf32>, tensor<1x1x2xf32>) -> tensor<1x1x6xf32>
  %15 = anvil.reshape %14 : tensor<1x1x6xf32> -> tensor<1x2x3xf32>
  return %0, %1, %2, %3, %15, %8, %9, %10, %11 : tensor<5x2x3xf32>, tensor<6x5xf32>, tensor<3x10xf32>, tensor<2x7x5xf32>, tensor<1x2x3xf32>, tensor<2x1x5xf32>, tensor<2x2x5xf32>, tensor<4x6x5xf32>, tensor<3x2x5xf32>
}

func.func @reductions(%a: tensor<3x4x5xf32>) -> (tensor<3x5xf32>, tensor<3x1x1xf32>, tensor<f32>, tensor<4xf32>) {
  %0 = anvil.reduce_sum %a dims [1] : tensor<3x4x5xf32> -> tensor<3x5xf32>
  %1 = anvil.reduce_mean %a dims [1, 2] keep_dims : tensor<3x4x5xf32> -> tensor<3x1x1xf32>
  %2 = anvil.reduce_max %a dims [0, 1, 2] : tensor<3x4x5xf32> -> tensor<f32>
  %3 = anvil.reduce_min %a dims [0, 2] : tensor<3x4x5xf32> -> tensor<4xf32>
  return %0, %1, %2, %3 : tensor<3x5xf32>, tensor<3x1x1xf32>, tensor<f32>, tensor<4xf32>
}

// Sums long enough for the CUDA backend to split into two stages
// (anvil-split-reductions: 8192 rows into 16 columns, as a bias gradient;
// 2 x 4096 products into 48, as a norm's weight gradient; 131072 terms into
// a scalar; 4 x 32 x 32 terms of NCHW into each of 8 channels, as a batch
// norm's sums, whose dimensions N and H, W are not next to each other:
// partials over H and W for each n, then over n; 2 x 4096 terms of a
// dropout's output into 48, whose mask the sum recomputes from each
// element's position: partials over the 4096 for each of the 2, the loops
// kept; 2 x 16^3 voxels into each of 4 channels, as an instance norm's
// bias gradient: partials over the voxels for each n, 8 rows, each row
// then in 32 slices): partial sums over slices, then their sum. Each output's terms
// add in another order than the CPU's sequential one, so the f32 errors of
// sums this long (sqrt(K) roundings) are judged as a composite's.
// tolerance: f32-composite
// int-high: 1000
func.func @long_sums(%a: tensor<8192x16xf32>, %b: tensor<2x4096x48xf32>, %c: tensor<2x4096x48xf32>, %d: tensor<4x8x32x32xf32>, %s: tensor<i64>, %v: tensor<2x4x16x16x16xf32>) -> (tensor<16xf32>, tensor<48xf32>, tensor<f32>, tensor<8xf32>, tensor<48xf32>, tensor<4xf32>) {
  %0 = anvil.reduce_sum %a dims [0] : tensor<8192x16xf32> -> tensor<16xf32>
  %p = anvil.mul %b, %c : tensor<2x4096x48xf32>
  %1 = anvil.reduce_sum %p dims [0, 1] : tensor<2x4096x48xf32> -> tensor<48xf32>
  %2 = anvil.reduce_sum %a dims [0, 1] : tensor<8192x16xf32> -> tensor<f32>
  %3 = anvil.reduce_sum %d dims [0, 2, 3] : tensor<4x8x32x32xf32> -> tensor<8xf32>
  %q = anvil.dropout %c, %s rate = 3.0e-01 : tensor<2x4096x48xf32>
  %4 = anvil.reduce_sum %q dims [0, 1] : tensor<2x4096x48xf32> -> tensor<48xf32>
  %5 = anvil.reduce_sum %v dims [0, 2, 3, 4] : tensor<2x4x16x16x16xf32> -> tensor<4xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<16xf32>, tensor<48xf32>, tensor<f32>, tensor<8xf32>, tensor<48xf32>, tensor<4xf32>
}

// Rows long enough for the CUDA backend to reduce on a warp per row
// (anvil-cuda-map-dispatches' warp-reductions: 256 contiguous terms or
// more): softmax and layer norm along rows of 300 (their maxima, sums and
// sums of squares), a row minimum over 1000 terms and the cross-entropy over
// 300 classes. 10 x 3 = 30 rows are 30 warps: 4 blocks of 8, the last two
// warps past the end. The lanes' partials add in a tree, not in the CPU's
// order.
// tolerance: f32-composite
// int-high: 300
func.func @row_reductions(%x: tensor<10x3x300xf32>, %g: tensor<300xf32>, %b: tensor<300xf32>, %y: tensor<5x1000xf32>, %t: tensor<10x3xi64>) -> (tensor<10x3x300xf32>, tensor<10x3x300xf32>, tensor<5xf32>, tensor<10x3xf32>) {
  %0 = anvil.softmax %x dim = 2 : tensor<10x3x300xf32>
  %1 = anvil.layer_norm %x scale(%g) bias(%b) axis = 2 {epsilon = 1.0e-05} : (tensor<10x3x300xf32>, tensor<300xf32>, tensor<300xf32>) -> tensor<10x3x300xf32>
  %2 = anvil.reduce_min %y dims [1] : tensor<5x1000xf32> -> tensor<5xf32>
  %3 = anvil.cross_entropy none %x, %t : (tensor<10x3x300xf32>, tensor<10x3xi64>) -> tensor<10x3xf32>
  return %0, %1, %2, %3 : tensor<10x3x300xf32>, tensor<10x3x300xf32>, tensor<5xf32>, tensor<10x3xf32>
}

// The cross-entropy alone over rows of 300, its logits (scaled to a
// spread of tens, where a row's maximum grows often and most exponentials
// underflow) read by nothing else: with the CUDA backend and the emulated
// grid, the rows' log-sum-exp is one pass that folds each row's maximum
// and sum of exponentials together (anvil-convert-to-linalg
// online-logsumexp), on a warp per row, the lanes' sums rescaled to their
// common maximum as they combine; the CPU takes two passes.
// tolerance: f32-composite
// int-high: 300
func.func @online_logsumexp(%x: tensor<10x3x300xf32>, %t: tensor<10x3xi64>) -> tensor<10x3xf32> {
  %c = anvil.constant dense<3.000000e+01> : tensor<f32>
  %cb = anvil.broadcast %c, dims = [] : tensor<f32> -> tensor<10x3x300xf32>
  %z = anvil.mul %x, %cb : tensor<10x3x300xf32>
  %0 = anvil.cross_entropy none %z, %t : (tensor<10x3x300xf32>, tensor<10x3xi64>) -> tensor<10x3xf32>
  return %0 : tensor<10x3xf32>
}

func.func @matmuls(%a: tensor<5x3xf32>, %b: tensor<3x7xf32>, %at: tensor<3x5xf32>, %bt: tensor<7x3xf32>, %x: tensor<2x5x3xf32>, %q: tensor<2x3x5x3xf32>, %k: tensor<2x3x7x3xf32>, %xt: tensor<2x3x5xf32>) -> (tensor<5x7xf32>, tensor<5x7xf32>, tensor<5x7xf32>, tensor<2x5x7xf32>, tensor<2x3x5x7xf32>, tensor<2x5x7xf32>) {
  %0 = anvil.matmul %a, %b : (tensor<5x3xf32>, tensor<3x7xf32>) -> tensor<5x7xf32>
  %1 = anvil.matmul %at, %b {transpose_lhs} : (tensor<3x5xf32>, tensor<3x7xf32>) -> tensor<5x7xf32>
  %2 = anvil.matmul %at, %bt {transpose_lhs, transpose_rhs} : (tensor<3x5xf32>, tensor<7x3xf32>) -> tensor<5x7xf32>
  %3 = anvil.matmul %x, %b : (tensor<2x5x3xf32>, tensor<3x7xf32>) -> tensor<2x5x7xf32>
  %4 = anvil.matmul %q, %k {transpose_rhs} : (tensor<2x3x5x3xf32>, tensor<2x3x7x3xf32>) -> tensor<2x3x5x7xf32>
  %5 = anvil.matmul %xt, %bt {transpose_lhs, transpose_rhs} : (tensor<2x3x5xf32>, tensor<7x3xf32>) -> tensor<2x5x7xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<5x7xf32>, tensor<5x7xf32>, tensor<5x7xf32>, tensor<2x5x7xf32>, tensor<2x3x5x7xf32>, tensor<2x5x7xf32>
}

// A GEMM product with rows of 4099 (not 16-byte aligned, and 1024 or
// more): for CUDA and the emulated grid its buffer has rows padded to 4160
// (anvil-cpu-pad-gemm-rows), the GEMM writes it with leading dimension 4160,
// and the exponential reads the strided rows, each row's 1024 whole runs of
// 4 as vectors and its last 3 points in a launch of their own (256 x 4099
// points, over the million where that second launch is made); the rows'
// maximum and sum fold on warps in runs of 4, the last 3 points one a lane.
func.func @padded_rows(%x: tensor<256x8xf32>, %w: tensor<8x4099xf32>) -> (tensor<256x4099xf32>, tensor<256xf32>, tensor<256xf32>) {
  %p = anvil.matmul %x, %w : (tensor<256x8xf32>, tensor<8x4099xf32>) -> tensor<256x4099xf32>
  %e = anvil.exp %p : tensor<256x4099xf32>
  %m = anvil.reduce_max %p dims [1] : tensor<256x4099xf32> -> tensor<256xf32>
  %s = anvil.reduce_sum %p dims [1] : tensor<256x4099xf32> -> tensor<256xf32>
  return %e, %m, %s : tensor<256x4099xf32>, tensor<256xf32>, tensor<256xf32>
}

// int-high: 7
func.func @gathers(%t: tensor<7x3xf32>, %i: tensor<2x5xi32>, %g: tensor<2x5x3xf32>, %x: tensor<4x7x2xf32>, %j: tensor<3xi64>) -> (tensor<2x5x3xf32>, tensor<7x3xf32>, tensor<4x3x2xf32>) {
  %0 = anvil.embedding %t[%i] : (tensor<7x3xf32>, tensor<2x5xi32>) -> tensor<2x5x3xf32>
  %1 = anvil.embedding_grad %g[%i] rows = 7 : (tensor<2x5x3xf32>, tensor<2x5xi32>) -> tensor<7x3xf32>
  %2 = anvil.gather %x[%j] axis = 1 : (tensor<4x7x2xf32>, tensor<3xi64>) -> tensor<4x3x2xf32>
  return %0, %1, %2 : tensor<2x5x3xf32>, tensor<7x3xf32>, tensor<4x3x2xf32>
}

// tolerance: f32-composite
func.func @normalizations(%x: tensor<3x5x7xf32>, %g: tensor<5x7xf32>, %b: tensor<5x7xf32>, %h: tensor<7xf32>) -> (tensor<3x5x7xf32>, tensor<3x5x7xf32>, tensor<3x5x7xf32>, tensor<3x5x7xf32>) {
  %0 = anvil.softmax %x dim = 0 : tensor<3x5x7xf32>
  %1 = anvil.log_softmax %x dim = 2 : tensor<3x5x7xf32>
  %2 = anvil.layer_norm %x scale(%g) bias(%b) axis = 1 {epsilon = 1.0e-03} : (tensor<3x5x7xf32>, tensor<5x7xf32>, tensor<5x7xf32>) -> tensor<3x5x7xf32>
  %3 = anvil.rms_norm %x scale(%h) axis = 2 : (tensor<3x5x7xf32>, tensor<7xf32>) -> tensor<3x5x7xf32>
  return %0, %1, %2, %3 : tensor<3x5x7xf32>, tensor<3x5x7xf32>, tensor<3x5x7xf32>, tensor<3x5x7xf32>
}

// tolerance: f32-composite
func.func @attention(%q: tensor<2x4x5x3xf32>, %k: tensor<2x2x6x3xf32>, %v: tensor<2x2x6x2xf32>, %m: tensor<5x6xf32>) -> (tensor<2x4x5x2xf32>, tensor<2x4x5x2xf32>) {
  %0 = anvil.attention %q, %k, %v mask(%m) {causal} : (tensor<2x4x5x3xf32>, tensor<2x2x6x3xf32>, tensor<2x2x6x2xf32>, tensor<5x6xf32>) -> tensor<2x4x5x2xf32>
  %1 = anvil.attention %q, %k, %v {scale = 0.25 : f64} : (tensor<2x4x5x3xf32>, tensor<2x2x6x3xf32>, tensor<2x2x6x2xf32>) -> tensor<2x4x5x2xf32>
  return %0, %1 : tensor<2x4x5x2xf32>, tensor<2x4x5x2xf32>
}

// Fused attention (anvil-flash-attention's ops: runtime calls, Anvil's
// flash-attention kernels on CUDA) and its gradient, from the forward's own
// result and log-sum-exp: causal grouped-query attention with more keys
// than queries and lengths that are not multiples of a GPU tile, a scaled
// non-causal one, and cross-attention to 5 keys (more queries than keys;
// several shapes in one function).
// tolerance: f32-composite
func.func @flash_attention(%q: tensor<2x4x37x16xf32>, %k: tensor<2x2x45x16xf32>, %v: tensor<2x2x45x16xf32>, %g: tensor<2x4x37x16xf32>, %kx: tensor<2x2x5x16xf32>, %vx: tensor<2x2x5x16xf32>) -> (tensor<2x4x37x16xf32>, tensor<2x4x37xf32>, tensor<2x4x37x16xf32>, tensor<2x2x45x16xf32>, tensor<2x2x45x16xf32>, tensor<2x4x37x16xf32>, tensor<2x4x37x16xf32>, tensor<2x2x45x16xf32>, tensor<2x2x45x16xf32>, tensor<2x4x37x16xf32>, tensor<2x4x37x16xf32>, tensor<2x2x5x16xf32>, tensor<2x2x5x16xf32>) {
  %o, %lse = anvil.flash_attention %q, %k, %v {causal} : (tensor<2x4x37x16xf32>, tensor<2x2x45x16xf32>, tensor<2x2x45x16xf32>) -> (tensor<2x4x37x16xf32>, tensor<2x4x37xf32>)
  %dq, %dk, %dv = anvil.flash_attention_grad %q, %k, %v, %o, %lse, %g {causal} : (tensor<2x4x37x16xf32>, tensor<2x2x45x16xf32>, tensor<2x2x45x16xf32>, tensor<2x4x37x16xf32>, tensor<2x4x37xf32>, tensor<2x4x37x16xf32>) -> (tensor<2x4x37x16xf32>, tensor<2x2x45x16xf32>, tensor<2x2x45x16xf32>)
  %o2, %lse2 = anvil.flash_attention %q, %k, %v {scale = 0.5 : f64} : (tensor<2x4x37x16xf32>, tensor<2x2x45x16xf32>, tensor<2x2x45x16xf32>) -> (tensor<2x4x37x16xf32>, tensor<2x4x37xf32>)
  %dq2, %dk2, %dv2 = anvil.flash_attention_grad %q, %k, %v, %o2, %lse2, %g {scale = 0.5 : f64} : (tensor<2x4x37x16xf32>, tensor<2x2x45x16xf32>, tensor<2x2x45x16xf32>, tensor<2x4x37x16xf32>, tensor<2x4x37xf32>, tensor<2x4x37x16xf32>) -> (tensor<2x4x37x16xf32>, tensor<2x2x45x16xf32>, tensor<2x2x45x16xf32>)
  %o3, %lse3 = anvil.flash_attention %q, %kx, %vx : (tensor<2x4x37x16xf32>, tensor<2x2x5x16xf32>, tensor<2x2x5x16xf32>) -> (tensor<2x4x37x16xf32>, tensor<2x4x37xf32>)
  %dq3, %dk3, %dv3 = anvil.flash_attention_grad %q, %kx, %vx, %o3, %lse3, %g : (tensor<2x4x37x16xf32>, tensor<2x2x5x16xf32>, tensor<2x2x5x16xf32>, tensor<2x4x37x16xf32>, tensor<2x4x37xf32>, tensor<2x4x37x16xf32>) -> (tensor<2x4x37x16xf32>, tensor<2x2x5x16xf32>, tensor<2x2x5x16xf32>)
  return %o, %lse, %dq, %dk, %dv, %o2, %dq2, %dk2, %dv2, %o3, %dq3, %dk3, %dv3 : tensor<2x4x37x16xf32>, tensor<2x4x37xf32>, tensor<2x4x37x16xf32>, tensor<2x2x45x16xf32>, tensor<2x2x45x16xf32>, tensor<2x4x37x16xf32>, tensor<2x4x37x16xf32>, tensor<2x2x45x16xf32>, tensor<2x2x45x16xf32>, tensor<2x4x37x16xf32>, tensor<2x4x37x16xf32>, tensor<2x2x5x16xf32>, tensor<2x2x5x16xf32>
}

// The same with bf16_gemms (the five products on bf16 operands, each
// rounded to bf16; the interpreter does not round) and 64-wide heads, as
// GPT-2's: causal, 70 queries and keys.
// tolerance: bf16-composite
func.func @flash_attention_bf16(%q: tensor<1x2x70x64xf32>, %k: tensor<1x2x70x64xf32>, %v: tensor<1x2x70x64xf32>, %g: tensor<1x2x70x64xf32>) -> (tensor<1x2x70x64xf32>, tensor<1x2x70xf32>, tensor<1x2x70x64xf32>, tensor<1x2x70x64xf32>, tensor<1x2x70x64xf32>) {
  %o, %lse = anvil.flash_attention %q, %k, %v {causal, bf16_gemms} : (tensor<1x2x70x64xf32>, tensor<1x2x70x64xf32>, tensor<1x2x70x64xf32>) -> (tensor<1x2x70x64xf32>, tensor<1x2x70xf32>)
  %dq, %dk, %dv = anvil.flash_attention_grad %q, %k, %v, %o, %lse, %g {causal, bf16_gemms} : (tensor<1x2x70x64xf32>, tensor<1x2x70x64xf32>, tensor<1x2x70x64xf32>, tensor<1x2x70x64xf32>, tensor<1x2x70xf32>, tensor<1x2x70x64xf32>) -> (tensor<1x2x70x64xf32>, tensor<1x2x70x64xf32>, tensor<1x2x70x64xf32>)
  return %o, %lse, %dq, %dk, %dv : tensor<1x2x70x64xf32>, tensor<1x2x70xf32>, tensor<1x2x70x64xf32>, tensor<1x2x70x64xf32>, tensor<1x2x70x64xf32>
}

// The same in the (B, T, H, D) layout (`bshd`, which anvil-flash-attention
// picks between a transformer's projections): contiguous operands, causal
// grouped-query attention; then q, k and v as column slices of one packed
// (B, T, 3 H D) projection, which reach the runtime as strided views (row
// stride 3 H D, offsets 0, H D, 2 H D), with the gradients packed the same
// way (`packed_grads`: written into their columns of one (B, T, 3 H D)).
// tolerance: f32-composite
func.func @flash_attention_bshd(%q: tensor<2x37x4x16xf32>, %k: tensor<2x45x2x16xf32>, %v: tensor<2x45x2x16xf32>, %g: tensor<2x37x4x16xf32>, %qkv: tensor<2x40x192xf32>, %g2: tensor<2x40x4x16xf32>) -> (tensor<2x37x4x16xf32>, tensor<2x4x37xf32>, tensor<2x37x4x16xf32>, tensor<2x45x2x16xf32>, tensor<2x45x2x16xf32>, tensor<2x40x4x16xf32>, tensor<2x40x4x16xf32>, tensor<2x40x4x16xf32>, tensor<2x40x4x16xf32>, tensor<2x40x192xf32>) {
  %o, %lse = anvil.flash_attention %q, %k, %v {bshd, causal} : (tensor<2x37x4x16xf32>, tensor<2x45x2x16xf32>, tensor<2x45x2x16xf32>) -> (tensor<2x37x4x16xf32>, tensor<2x4x37xf32>)
  %dq, %dk, %dv = anvil.flash_attention_grad %q, %k, %v, %o, %lse, %g {bshd, causal} : (tensor<2x37x4x16xf32>, tensor<2x45x2x16xf32>, tensor<2x45x2x16xf32>, tensor<2x37x4x16xf32>, tensor<2x4x37xf32>, tensor<2x37x4x16xf32>) -> (tensor<2x37x4x16xf32>, tensor<2x45x2x16xf32>, tensor<2x45x2x16xf32>)
  %qs = anvil.slice %qkv [0:2:1, 0:40:1, 0:64:1] : tensor<2x40x192xf32> -> tensor<2x40x64xf32>
  %ks = anvil.slice %qkv [0:2:1, 0:40:1, 64:128:1] : tensor<2x40x192xf32> -> tensor<2x40x64xf32>
  %vs = anvil.slice %qkv [0:2:1, 0:40:1, 128:192:1] : tensor<2x40x192xf32> -> tensor<2x40x64xf32>
  %q2 = anvil.reshape %qs : tensor<2x40x64xf32> -> tensor<2x40x4x16xf32>
  %k2 = anvil.reshape %ks : tensor<2x40x64xf32> -> tensor<2x40x4x16xf32>
  %v2 = anvil.reshape %vs : tensor<2x40x64xf32> -> tensor<2x40x4x16xf32>
  %o2, %lse2 = anvil.flash_attention %q2, %k2, %v2 {bshd, causal} : (tensor<2x40x4x16xf32>, tensor<2x40x4x16xf32>, tensor<2x40x4x16xf32>) -> (tensor<2x40x4x16xf32>, tensor<2x4x40xf32>)
  %dq2, %dk2, %dv2 = anvil.flash_attention_grad %q2, %k2, %v2, %o2, %lse2, %g2 {bshd, causal} : (tensor<2x40x4x16xf32>, tensor<2x40x4x16xf32>, tensor<2x40x4x16xf32>, tensor<2x40x4x16xf32>, tensor<2x4x40xf32>, tensor<2x40x4x16xf32>) -> (tensor<2x40x4x16xf32>, tensor<2x40x4x16xf32>, tensor<2x40x4x16xf32>)
  %dqkv = anvil.flash_attention_grad %q2, %k2, %v2, %o2, %lse2, %g2 {bshd, causal, packed_grads} : (tensor<2x40x4x16xf32>, tensor<2x40x4x16xf32>, tensor<2x40x4x16xf32>, tensor<2x40x4x16xf32>, tensor<2x4x40xf32>, tensor<2x40x4x16xf32>) -> tensor<2x40x192xf32>
  return %o, %lse, %dq, %dk, %dv, %o2, %dq2, %dk2, %dv2, %dqkv : tensor<2x37x4x16xf32>, tensor<2x4x37xf32>, tensor<2x37x4x16xf32>, tensor<2x45x2x16xf32>, tensor<2x45x2x16xf32>, tensor<2x40x4x16xf32>, tensor<2x40x4x16xf32>, tensor<2x40x4x16xf32>, tensor<2x40x4x16xf32>, tensor<2x40x192xf32>
}

// Both on bf16 tensors (lse f32), as the CUDA backend runs fused attention
// with bf16 products (anvil-flash-attention{bf16-tensors}): q, k and v as
// column slices of one packed bf16 (B, T, 3 H D) projection, strided views
// whose rows start 16 bytes apart (cuDNN reads them in place on a GPU), the
// gradients packed the same way; and causal grouped-query attention in
// (B, H, T, D) with 64-wide heads.
// tolerance: bf16-composite
func.func @flash_attention_bf16_tensors(%qkv: tensor<2x40x192xf32>, %g: tensor<2x40x4x16xf32>, %q: tensor<1x4x70x64xf32>, %k: tensor<1x2x70x64xf32>, %v: tensor<1x2x70x64xf32>, %g2: tensor<1x4x70x64xf32>) -> (tensor<2x40x4x16xf32>, tensor<2x4x40xf32>, tensor<2x40x192xf32>, tensor<1x4x70x64xf32>, tensor<1x4x70xf32>, tensor<1x4x70x64xf32>, tensor<1x2x70x64xf32>, tensor<1x2x70x64xf32>) {
  %p = anvil.cast %qkv : tensor<2x40x192xf32> to tensor<2x40x192xbf16>
  %qs = anvil.slice %p [0:2:1, 0:40:1, 0:64:1] : tensor<2x40x192xbf16> -> tensor<2x40x64xbf16>
  %ks = anvil.slice %p [0:2:1, 0:40:1, 64:128:1] : tensor<2x40x192xbf16> -> tensor<2x40x64xbf16>
  %vs = anvil.slice %p [0:2:1, 0:40:1, 128:192:1] : tensor<2x40x192xbf16> -> tensor<2x40x64xbf16>
  %q1 = anvil.reshape %qs : tensor<2x40x64xbf16> -> tensor<2x40x4x16xbf16>
  %k1 = anvil.reshape %ks : tensor<2x40x64xbf16> -> tensor<2x40x4x16xbf16>
  %v1 = anvil.reshape %vs : tensor<2x40x64xbf16> -> tensor<2x40x4x16xbf16>
  %g1 = anvil.cast %g : tensor<2x40x4x16xf32> to tensor<2x40x4x16xbf16>
  %o1, %lse1 = anvil.flash_attention %q1, %k1, %v1 {bshd, causal, bf16_gemms} : (tensor<2x40x4x16xbf16>, tensor<2x40x4x16xbf16>, tensor<2x40x4x16xbf16>) -> (tensor<2x40x4x16xbf16>, tensor<2x4x40xf32>)
  %d1 = anvil.flash_attention_grad %q1, %k1, %v1, %o1, %lse1, %g1 {bshd, causal, bf16_gemms, packed_grads} : (tensor<2x40x4x16xbf16>, tensor<2x40x4x16xbf16>, tensor<2x40x4x16xbf16>, tensor<2x40x4x16xbf16>, tensor<2x4x40xf32>, tensor<2x40x4x16xbf16>) -> tensor<2x40x192xbf16>
  %q2 = anvil.cast %q : tensor<1x4x70x64xf32> to tensor<1x4x70x64xbf16>
  %k2 = anvil.cast %k : tensor<1x2x70x64xf32> to tensor<1x2x70x64xbf16>
  %v2 = anvil.cast %v : tensor<1x2x70x64xf32> to tensor<1x2x70x64xbf16>
  %h2 = anvil.cast %g2 : tensor<1x4x70x64xf32> to tensor<1x4x70x64xbf16>
  %o2, %lse2 = anvil.flash_attention %q2, %k2, %v2 {causal, bf16_gemms} : (tensor<1x4x70x64xbf16>, tensor<1x2x70x64xbf16>, tensor<1x2x70x64xbf16>) -> (tensor<1x4x70x64xbf16>, tensor<1x4x70xf32>)
  %dq2, %dk2, %dv2 = anvil.flash_attention_grad %q2, %k2, %v2, %o2, %lse2, %h2 {causal, bf16_gemms} : (tensor<1x4x70x64xbf16>, tensor<1x2x70x64xbf16>, tensor<1x2x70x64xbf16>, tensor<1x4x70x64xbf16>, tensor<1x4x70xf32>, tensor<1x4x70x64xbf16>) -> (tensor<1x4x70x64xbf16>, tensor<1x2x70x64xbf16>, tensor<1x2x70x64xbf16>)
  %ro1 = anvil.cast %o1 : tensor<2x40x4x16xbf16> to tensor<2x40x4x16xf32>
  %rd1 = anvil.cast %d1 : tensor<2x40x192xbf16> to tensor<2x40x192xf32>
  %ro2 = anvil.cast %o2 : tensor<1x4x70x64xbf16> to tensor<1x4x70x64xf32>
  %rq2 = anvil.cast %dq2 : tensor<1x4x70x64xbf16> to tensor<1x4x70x64xf32>
  %rk2 = anvil.cast %dk2 : tensor<1x2x70x64xbf16> to tensor<1x2x70x64xf32>
  %rv2 = anvil.cast %dv2 : tensor<1x2x70x64xbf16> to tensor<1x2x70x64xf32>
  return %ro1, %lse1, %rd1, %ro2, %lse2, %rq2, %rk2, %rv2 : tensor<2x40x4x16xf32>, tensor<2x4x40xf32>, tensor<2x40x192xf32>, tensor<1x4x70x64xf32>, tensor<1x4x70xf32>, tensor<1x4x70x64xf32>, tensor<1x2x70x64xf32>, tensor<1x2x70x64xf32>
}

// With a key bias (B, Tk), added to every query's scaled scores (the
// padding mask anvil-flash-attention takes from an anvil.attention's mask):
// causal grouped-query attention in (B, H, T, D) with more keys than
// queries. (CUDA runs f32 products on Anvil's kernels; cuDNN's attention
// is bf16 only.)
// tolerance: f32-composite
func.func @flash_attention_key_bias(%q: tensor<2x4x37x16xf32>, %k: tensor<2x2x45x16xf32>, %v: tensor<2x2x45x16xf32>, %g: tensor<2x4x37x16xf32>, %bias: tensor<2x45xf32>) -> (tensor<2x4x37x16xf32>, tensor<2x4x37xf32>, tensor<2x4x37x16xf32>, tensor<2x2x45x16xf32>, tensor<2x2x45x16xf32>) {
  %o, %lse = anvil.flash_attention %q, %k, %v key_bias(%bias) {causal} : (tensor<2x4x37x16xf32>, tensor<2x2x45x16xf32>, tensor<2x2x45x16xf32>, tensor<2x45xf32>) -> (tensor<2x4x37x16xf32>, tensor<2x4x37xf32>)
  %dq, %dk, %dv = anvil.flash_attention_grad %q, %k, %v, %o, %lse, %g key_bias(%bias) {causal} : (tensor<2x4x37x16xf32>, tensor<2x2x45x16xf32>, tensor<2x2x45x16xf32>, tensor<2x4x37x16xf32>, tensor<2x4x37xf32>, tensor<2x4x37x16xf32>, tensor<2x45xf32>) -> (tensor<2x4x37x16xf32>, tensor<2x2x45x16xf32>, tensor<2x2x45x16xf32>)
  return %o, %lse, %dq, %dk, %dv : tensor<2x4x37x16xf32>, tensor<2x4x37xf32>, tensor<2x4x37x16xf32>, tensor<2x2x45x16xf32>, tensor<2x2x45x16xf32>
}

// The same on bf16 tensors in (B, T, H, D), q, k and v column slices of
// one packed projection, the gradients packed (BERT's form on CUDA, which
// may run it on cuDNN with the bias as its graph's).
// tolerance: bf16-composite
func.func @flash_attention_key_bias_bf16(%qkv: tensor<2x40x192xf32>, %g: tensor<2x40x4x16xf32>, %bias: tensor<2x40xf32>) -> (tensor<2x40x4x16xf32>, tensor<2x4x40xf32>, tensor<2x40x192xf32>) {
  %p = anvil.cast %qkv : tensor<2x40x192xf32> to tensor<2x40x192xbf16>
  %qs = anvil.slice %p [0:2:1, 0:40:1, 0:64:1] : tensor<2x40x192xbf16> -> tensor<2x40x64xbf16>
  %ks = anvil.slice %p [0:2:1, 0:40:1, 64:128:1] : tensor<2x40x192xbf16> -> tensor<2x40x64xbf16>
  %vs = anvil.slice %p [0:2:1, 0:40:1, 128:192:1] : tensor<2x40x192xbf16> -> tensor<2x40x64xbf16>
  %q1 = anvil.reshape %qs : tensor<2x40x64xbf16> -> tensor<2x40x4x16xbf16>
  %k1 = anvil.reshape %ks : tensor<2x40x64xbf16> -> tensor<2x40x4x16xbf16>
  %v1 = anvil.reshape %vs : tensor<2x40x64xbf16> -> tensor<2x40x4x16xbf16>
  %h1 = anvil.cast %g : tensor<2x40x4x16xf32> to tensor<2x40x4x16xbf16>
  %o1, %lse1 = anvil.flash_attention %q1, %k1, %v1 key_bias(%bias) {bshd, bf16_gemms} : (tensor<2x40x4x16xbf16>, tensor<2x40x4x16xbf16>, tensor<2x40x4x16xbf16>, tensor<2x40xf32>) -> (tensor<2x40x4x16xbf16>, tensor<2x4x40xf32>)
  %d1 = anvil.flash_attention_grad %q1, %k1, %v1, %o1, %lse1, %h1 key_bias(%bias) {bshd, bf16_gemms, packed_grads} : (tensor<2x40x4x16xbf16>, tensor<2x40x4x16xbf16>, tensor<2x40x4x16xbf16>, tensor<2x40x4x16xbf16>, tensor<2x4x40xf32>, tensor<2x40x4x16xbf16>, tensor<2x40xf32>) -> tensor<2x40x192xbf16>
  %ro1 = anvil.cast %o1 : tensor<2x40x4x16xbf16> to tensor<2x40x4x16xf32>
  %rd1 = anvil.cast %d1 : tensor<2x40x192xbf16> to tensor<2x40x192xf32>
  return %ro1, %lse1, %rd1 : tensor<2x40x4x16xf32>, tensor<2x4x40xf32>, tensor<2x40x192xf32>
}

// A constant key bias (a fixed padding mask): a global, the host's memory,
// which the runtime's functions on a GPU cannot read, so the step copies it
// into a planned buffer (a dispatch) before the call.
// tolerance: f32-composite
func.func @flash_attention_constant_key_bias(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8xf32>) {
  %bias = anvil.constant dense<[[0.0, 0.0, 0.0, 0.0, 0.0, -1.0e+04, -1.0e+04, -1.0e+04], [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, -1.5, -1.0e+04]]> : tensor<2x8xf32>
  %o, %lse = anvil.flash_attention %q, %k, %v key_bias(%bias) : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x8xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8xf32>)
  return %o, %lse : tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
}

// tolerance: f32-composite
// int-high: 7
func.func @cross_entropy(%z: tensor<3x5x7xf32>, %t: tensor<3x5xi64>) -> (tensor<f32>, tensor<3x5xf32>, tensor<f32>) {
  %0 = anvil.cross_entropy mean %z, %t {ignore_index = 3 : i64, label_smoothing = 0.1 : f64} : (tensor<3x5x7xf32>, tensor<3x5xi64>) -> tensor<f32>
  %1 = anvil.cross_entropy none %z, %t : (tensor<3x5x7xf32>, tensor<3x5xi64>) -> tensor<3x5xf32>
  %2 = anvil.cross_entropy sum %z, %t : (tensor<3x5x7xf32>, tensor<3x5xi64>) -> tensor<f32>
  return %0, %1, %2 : tensor<f32>, tensor<3x5xf32>, tensor<f32>
}

// int-high: 1000
func.func @dropout(%x: tensor<3x40xf32>, %s: tensor<i64>) -> tensor<3x40xf32> {
  %0 = anvil.dropout %x, %s rate = 3.0e-01 : tensor<3x40xf32>
  return %0 : tensor<3x40xf32>
}

func.func @convolutions(%x: tensor<2x4x9x8xf32>, %w: tensor<6x2x3x2xf32>, %b: tensor<6xf32>, %x1: tensor<1x3x11xf32>, %w1: tensor<2x3x4xf32>, %x3: tensor<1x2x5x4x6xf32>, %w3: tensor<2x2x2x3x2xf32>) -> (tensor<2x6x5x8xf32>, tensor<1x2x2xf32>, tensor<1x2x4x2x3xf32>) {
  %0 = anvil.conv %x, %w, %b stride [2, 1] pad_low [1, 0] pad_high [1, 2] dilation [1, 2] {groups = 2 : i64} : (tensor<2x4x9x8xf32>, tensor<6x2x3x2xf32>, tensor<6xf32>) -> tensor<2x6x5x8xf32>
  %1 = anvil.conv %x1, %w1 stride [3] pad_low [0] pad_high [0] dilation [2] : (tensor<1x3x11xf32>, tensor<2x3x4xf32>) -> tensor<1x2x2xf32>
  %2 = anvil.conv %x3, %w3 stride [1, 2, 2] pad_low [0, 1, 0] pad_high [0, 0, 1] dilation [1, 1, 1] : (tensor<1x2x5x4x6xf32>, tensor<2x2x2x3x2xf32>) -> tensor<1x2x4x2x3xf32>
  return %0, %1, %2 : tensor<2x6x5x8xf32>, tensor<1x2x2xf32>, tensor<1x2x4x2x3xf32>
}

func.func @convolution_gradients(%x: tensor<2x4x9x8xf32>, %g: tensor<2x6x5x8xf32>, %t: tensor<2x4x5x6xf32>, %tw: tensor<4x3x3x2xf32>, %tb: tensor<6xf32>) -> (tensor<6x2x3x2xf32>, tensor<2x6x11x12xf32>) {
  %0 = anvil.conv_filter_grad %x, %g kernel [3, 2] stride [2, 1] pad_low [1, 0] pad_high [1, 2] dilation [1, 2] {groups = 2 : i64} : (tensor<2x4x9x8xf32>, tensor<2x6x5x8xf32>) -> tensor<6x2x3x2xf32>
  %1 = anvil.conv_transpose %t, %tw, %tb stride [2, 2] pad_low [1, 0] pad_high [0, 1] dilation [1, 2] output_padding [1, 0] {groups = 2 : i64} : (tensor<2x4x5x6xf32>, tensor<4x3x3x2xf32>, tensor<6xf32>) -> tensor<2x6x11x12xf32>
  return %0, %1 : tensor<6x2x3x2xf32>, tensor<2x6x11x12xf32>
}

// Convolutions a library takes as one call each (anvil-library-convs: on
// the emulated CUDA grid the CPU's reference of cuDNN's, on CUDA cuDNN):
// symmetric padding, a pad_high that only drops a stride's remainder
// (%5), 1-3 spatial dimensions, groups, strides and dilation, a filter
// gradient, a transposed convolution with output padding and a bias.
func.func @library_convolutions(%x: tensor<2x4x9x8xf32>, %w: tensor<6x2x3x3xf32>, %b: tensor<6xf32>, %x1: tensor<1x3x11xf32>, %w1: tensor<2x3x4xf32>, %x3: tensor<1x2x5x4x6xf32>, %w3: tensor<2x2x2x3x2xf32>, %g: tensor<2x6x5x4xf32>, %t: tensor<2x4x5x6xf32>, %tw: tensor<4x3x3x2xf32>, %tb: tensor<6xf32>, %x8: tensor<1x2x8x8xf32>, %w8: tensor<4x2x3x3xf32>) -> (tensor<2x6x5x4xf32>, tensor<1x2x3xf32>, tensor<1x2x4x2x3xf32>, tensor<6x2x3x3xf32>, tensor<2x6x10x13xf32>, tensor<1x4x4x4xf32>) {
  %0 = anvil.conv %x, %w, %b stride [2, 2] pad_low [1, 1] pad_high [1, 1] dilation [1, 1] {groups = 2 : i64} : (tensor<2x4x9x8xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<2x6x5x4xf32>
  %1 = anvil.conv %x1, %w1 stride [3] pad_low [1] pad_high [1] dilation [2] : (tensor<1x3x11xf32>, tensor<2x3x4xf32>) -> tensor<1x2x3xf32>
  %2 = anvil.conv %x3, %w3 stride [1, 2, 2] pad_low [0, 1, 0] pad_high [0, 1, 0] dilation [1, 1, 1] : (tensor<1x2x5x4x6xf32>, tensor<2x2x2x3x2xf32>) -> tensor<1x2x4x2x3xf32>
  %3 = anvil.conv_filter_grad %x, %g kernel [3, 3] stride [2, 2] pad_low [1, 1] pad_high [1, 1] dilation [1, 1] {groups = 2 : i64} : (tensor<2x4x9x8xf32>, tensor<2x6x5x4xf32>) -> tensor<6x2x3x3xf32>
  %4 = anvil.conv_transpose %t, %tw, %tb stride [2, 2] pad_low [1, 0] pad_high [1, 0] dilation [1, 2] output_padding [1, 0] {groups = 2 : i64} : (tensor<2x4x5x6xf32>, tensor<4x3x3x2xf32>, tensor<6xf32>) -> tensor<2x6x10x13xf32>
  %5 = anvil.conv %x8, %w8 stride [2, 2] pad_low [1, 1] pad_high [0, 0] dilation [1, 1] : (tensor<1x2x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x4x4xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<2x6x5x4xf32>, tensor<1x2x3xf32>, tensor<1x2x4x2x3xf32>, tensor<6x2x3x3xf32>, tensor<2x6x10x13xf32>, tensor<1x4x4x4xf32>
}

// The same three kinds in bf16: exact products, f32 sums, each result
// rounded once to bf16 (the interpreter rounds only the results).
// tolerance: bf16
func.func @library_convolutions_bf16(%x: tensor<2x4x9x8xf32>, %w: tensor<6x2x3x3xf32>, %g: tensor<2x6x5x4xf32>) -> (tensor<2x6x5x4xf32>, tensor<6x2x3x3xf32>, tensor<2x4x9x8xf32>) {
  %xb = anvil.cast %x : tensor<2x4x9x8xf32> to tensor<2x4x9x8xbf16>
  %wb = anvil.cast %w : tensor<6x2x3x3xf32> to tensor<6x2x3x3xbf16>
  %gb = anvil.cast %g : tensor<2x6x5x4xf32> to tensor<2x6x5x4xbf16>
  %0 = anvil.conv %xb, %wb stride [2, 2] pad_low [1, 1] pad_high [1, 1] dilation [1, 1] {groups = 2 : i64} : (tensor<2x4x9x8xbf16>, tensor<6x2x3x3xbf16>) -> tensor<2x6x5x4xbf16>
  %1 = anvil.conv_filter_grad %xb, %gb kernel [3, 3] stride [2, 2] pad_low [1, 1] pad_high [1, 1] dilation [1, 1] {groups = 2 : i64} : (tensor<2x4x9x8xbf16>, tensor<2x6x5x4xbf16>) -> tensor<6x2x3x3xbf16>
  %2 = anvil.conv_transpose %gb, %wb stride [2, 2] pad_low [1, 1] pad_high [1, 1] dilation [1, 1] output_padding [0, 1] {groups = 2 : i64} : (tensor<2x6x5x4xbf16>, tensor<6x2x3x3xbf16>) -> tensor<2x4x9x8xbf16>
  %r0 = anvil.cast %0 : tensor<2x6x5x4xbf16> to tensor<2x6x5x4xf32>
  %r1 = anvil.cast %1 : tensor<6x2x3x3xbf16> to tensor<6x2x3x3xf32>
  %r2 = anvil.cast %2 : tensor<2x4x9x8xbf16> to tensor<2x4x9x8xf32>
  return %r0, %r1, %r2 : tensor<2x6x5x4xf32>, tensor<6x2x3x3xf32>, tensor<2x4x9x8xf32>
}

func.func @pooling(%x: tensor<2x3x9x7xf32>, %g: tensor<2x3x5x4xf32>, %u: tensor<1x2x3x2xf32>) -> (tensor<2x3x5x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x9x7xf32>, tensor<1x2x6x6xf32>) {
  %0 = anvil.max_pool %x window [3, 2] stride [2, 2] pad_low [1, 1] pad_high [1, 0] : tensor<2x3x9x7xf32> -> tensor<2x3x5x4xf32>
  %1 = anvil.avg_pool %x window [3, 2] stride [2, 2] pad_low [1, 1] pad_high [1, 0] : tensor<2x3x9x7xf32> -> tensor<2x3x5x4xf32>
  %2 = anvil.avg_pool %x window [3, 2] stride [2, 2] pad_low [1, 1] pad_high [1, 0] {count_include_pad} : tensor<2x3x9x7xf32> -> tensor<2x3x5x4xf32>
  %3 = anvil.max_pool_grad %x, %g window [3, 2] stride [2, 2] pad_low [1, 1] pad_high [1, 0] : (tensor<2x3x9x7xf32>, tensor<2x3x5x4xf32>) -> tensor<2x3x9x7xf32>
  %4 = anvil.upsample_nearest %u scale [2, 3] : tensor<1x2x3x2xf32> -> tensor<1x2x6x6xf32>
  return %0, %1, %2, %3, %4 : tensor<2x3x5x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x5x4xf32>, tensor<2x3x9x7xf32>, tensor<1x2x6x6xf32>
}

// int-high: 9
func.func @argmax(%x: tensor<3x5x4xf32>, %i: tensor<4x6xi32>) -> (tensor<3x4xi64>, tensor<3x1x4xi64>, tensor<4xi64>) {
  %0 = anvil.argmax %x dim = 1 : tensor<3x5x4xf32> -> tensor<3x4xi64>
  %1 = anvil.argmax %x dim = 1 keep_dims : tensor<3x5x4xf32> -> tensor<3x1x4xi64>
  %2 = anvil.argmax %i dim = 1 : tensor<4x6xi32> -> tensor<4xi64>
  return %0, %1, %2 : tensor<3x4xi64>, tensor<3x1x4xi64>, tensor<4xi64>
}

// tolerance: f32-composite
// int-high: 9
func.func @more_composites(%x: tensor<2x6x5x3xf32>, %t: tensor<2x6x5x3xf32>, %g: tensor<6xf32>, %b: tensor<6xf32>, %table: tensor<9x4xf32>, %ids: tensor<3x5xi64>, %q: tensor<2x3x7x8xf32>, %cos: tensor<7x4xf32>, %sin: tensor<7x4xf32>) -> (tensor<f32>, tensor<f32>, tensor<2x6x5x3xf32>, tensor<2x6xf32>, tensor<2x6x5x3xf32>, tensor<2x6x5x3xf32>, tensor<2x6x5x3xf32>, tensor<6xf32>, tensor<6xf32>, tensor<3x4xf32>, tensor<2x3x7x8xf32>, tensor<2x3x7x8xf32>) {
  %0 = anvil.mse_loss mean %x, %t : (tensor<2x6x5x3xf32>, tensor<2x6x5x3xf32>) -> tensor<f32>
  %p = anvil.sigmoid %t : tensor<2x6x5x3xf32>
  %1 = anvil.bce_with_logits sum %x, %p : (tensor<2x6x5x3xf32>, tensor<2x6x5x3xf32>) -> tensor<f32>
  %2 = anvil.focal_loss none %x, %p {alpha = 0.25 : f64, gamma = 2.0 : f64} : (tensor<2x6x5x3xf32>, tensor<2x6x5x3xf32>) -> tensor<2x6x5x3xf32>
  %px = anvil.sigmoid %x : tensor<2x6x5x3xf32>
  %3 = anvil.dice_loss none %px, %p : (tensor<2x6x5x3xf32>, tensor<2x6x5x3xf32>) -> tensor<2x6xf32>
  %4 = anvil.group_norm %x scale(%g) bias(%b) groups = 3 : (tensor<2x6x5x3xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<2x6x5x3xf32>
  %5 = anvil.instance_norm %x scale(%g) : (tensor<2x6x5x3xf32>, tensor<6xf32>) -> tensor<2x6x5x3xf32>
  %6:3 = anvil.batch_norm_train %x, %g, %b : (tensor<2x6x5x3xf32>, tensor<6xf32>, tensor<6xf32>) -> (tensor<2x6x5x3xf32>, tensor<6xf32>, tensor<6xf32>)
  %7 = anvil.embedding_bag mean %table[%ids] : (tensor<9x4xf32>, tensor<3x5xi64>) -> tensor<3x4xf32>
  %8 = anvil.rope %q, %cos, %sin : (tensor<2x3x7x8xf32>, tensor<7x4xf32>, tensor<7x4xf32>) -> tensor<2x3x7x8xf32>
  %9 = anvil.rope %q, %cos, %sin {interleaved} : (tensor<2x3x7x8xf32>, tensor<7x4xf32>, tensor<7x4xf32>) -> tensor<2x3x7x8xf32>
  return %0, %1, %2, %3, %4, %5, %6#0, %6#1, %6#2, %7, %8, %9 : tensor<f32>, tensor<f32>, tensor<2x6x5x3xf32>, tensor<2x6xf32>, tensor<2x6x5x3xf32>, tensor<2x6x5x3xf32>, tensor<2x6x5x3xf32>, tensor<6xf32>, tensor<6xf32>, tensor<3x4xf32>, tensor<2x3x7x8xf32>, tensor<2x3x7x8xf32>
}

// A process started alone is a world of one rank: an all-reduce (a call of
// the runtime's anvil_rt_all_reduce_f32 on the operand's buffer, copied
// first because %x is read again) returns its operand, and so do a
// reduce-scatter, an axis slice and an all-gather (the runtime's copies,
// at axis index 0).
// tolerance: f32
func.func @collectives(%x: tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>) {
  %0 = anvil.all_reduce mean %x axis "dp" : tensor<3x5xf32>
  %1 = anvil.add %0, %x : tensor<3x5xf32>
  %2 = anvil.reduce_scatter sum %1 axis "dp" : tensor<3x5xf32> -> tensor<3x5xf32>
  %3 = anvil.axis_slice %x axis "dp" : tensor<3x5xf32> -> tensor<3x5xf32>
  %4 = anvil.mul %2, %3 : tensor<3x5xf32>
  %5 = anvil.all_gather %4 axis "dp" : tensor<3x5xf32> -> tensor<3x5xf32>
  return %0, %1, %5 : tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>
}

// FP8 quantization (anvil.fp8_quantize): the scale from the tensor's amax
// or given (the delayed recipe's), the cast to E4M3 or E5M2 and back, the
// scale undone; without a forward format the identity. MX blocks along
// either dimension: a power-of-two scale per block, read off the bits of
// the block's amax (test/Conversion/mx-blocks.test has the edge cases).
// tolerance: f32
func.func @fp8(%x: tensor<6x7xf32>, %s: tensor<f32>) -> (tensor<6x7xf32>, tensor<6x7xf32>, tensor<6x7xf32>, tensor<6x7xf32>, tensor<6x7xf32>, tensor<6x7xf32>) {
  %0 = anvil.fp8_quantize %x forward f8E4M3FN : tensor<6x7xf32>
  %1 = anvil.fp8_quantize %x forward f8E5M2 backward f8E5M2 : tensor<6x7xf32>
  %2 = anvil.fp8_quantize %x backward f8E5M2 : tensor<6x7xf32>
  %3 = anvil.fp8_quantize %x scale %s forward f8E4M3FN : tensor<6x7xf32>
  %4 = anvil.fp8_quantize %x forward f8E4M3FN block 7 dim 1 : tensor<6x7xf32>
  %5 = anvil.fp8_quantize %x forward f8E5M2 block 3 dim 0 : tensor<6x7xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<6x7xf32>, tensor<6x7xf32>, tensor<6x7xf32>, tensor<6x7xf32>, tensor<6x7xf32>, tensor<6x7xf32>
}

// FP8 GEMMs: a matmul of two tensorwise quantizations becomes
// anvil.matmul_f8 of the 8-bit codes (on the CPU the codes are widened for
// BLAS: anvil_rt_gemm_f8; on CUDA cuBLASLt reads them, K a multiple of
// 16), times the two dequantization factors. A weight shared by a batch (a
// linear layer), dW = A^T dY and dX = dY W^T, E4M3 by E5M2. (The CPU
// agrees within f32's tolerance; the fp8-gemm one is for Hopper's tensor
// cores, which the GPU bundle compares with the same cases.)
// tolerance: fp8-gemm
func.func @fp8_gemms(%x: tensor<2x5x16xf32>, %w: tensor<16x32xf32>, %a: tensor<16x16xf32>, %g: tensor<16x32xf32>) -> (tensor<2x5x32xf32>, tensor<16x32xf32>, tensor<16x16xf32>) {
  %qx = anvil.fp8_quantize %x forward f8E4M3FN : tensor<2x5x16xf32>
  %qw = anvil.fp8_quantize %w forward f8E4M3FN : tensor<16x32xf32>
  %qa = anvil.fp8_quantize %a forward f8E4M3FN : tensor<16x16xf32>
  %qg = anvil.fp8_quantize %g forward f8E5M2 : tensor<16x32xf32>
  %0 = anvil.matmul %qx, %qw : (tensor<2x5x16xf32>, tensor<16x32xf32>) -> tensor<2x5x32xf32>
  %1 = anvil.matmul %qa, %qg {transpose_lhs} : (tensor<16x16xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
  %2 = anvil.matmul %qg, %qw {transpose_rhs} : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x16xf32>
  return %0, %1, %2 : tensor<2x5x32xf32>, tensor<16x32xf32>, tensor<16x16xf32>
}

// GEMMs on bf16 operands (anvil-bf16's): exact products accumulated in
// f32, the product rounded to bf16 once (the CPU widens the operands for
// BLAS: anvil_rt_gemm_bf16; CUDA runs cuBLAS's bf16 GEMM on the tensor
// cores). A weight shared by a batch, dW = X^T dY, dX = dY W^T and a
// batched product with a transposed operand (attention's scores). The
// interpreter does not round the products to bf16; the GPU's f32 sums may
// round to the neighbouring bf16 value: within one bf16 unit.
// tolerance: bf16
func.func @bf16_gemms(%x: tensor<2x5x16xf32>, %w: tensor<16x32xf32>, %a: tensor<16x16xf32>, %g: tensor<16x32xf32>, %q: tensor<2x3x5x8xf32>, %k: tensor<2x3x7x8xf32>) -> (tensor<2x5x32xf32>, tensor<16x32xf32>, tensor<16x16xf32>, tensor<2x3x5x7xf32>) {
  %x16 = anvil.cast %x : tensor<2x5x16xf32> to tensor<2x5x16xbf16>
  %w16 = anvil.cast %w : tensor<16x32xf32> to tensor<16x32xbf16>
  %a16 = anvil.cast %a : tensor<16x16xf32> to tensor<16x16xbf16>
  %g16 = anvil.cast %g : tensor<16x32xf32> to tensor<16x32xbf16>
  %q16 = anvil.cast %q : tensor<2x3x5x8xf32> to tensor<2x3x5x8xbf16>
  %k16 = anvil.cast %k : tensor<2x3x7x8xf32> to tensor<2x3x7x8xbf16>
  %0 = anvil.matmul %x16, %w16 : (tensor<2x5x16xbf16>, tensor<16x32xbf16>) -> tensor<2x5x32xbf16>
  %1 = anvil.matmul %a16, %g16 {transpose_lhs} : (tensor<16x16xbf16>, tensor<16x32xbf16>) -> tensor<16x32xbf16>
  %2 = anvil.matmul %g16, %w16 {transpose_rhs} : (tensor<16x32xbf16>, tensor<16x32xbf16>) -> tensor<16x16xbf16>
  %3 = anvil.matmul %q16, %k16 {transpose_rhs} : (tensor<2x3x5x8xbf16>, tensor<2x3x7x8xbf16>) -> tensor<2x3x5x7xbf16>
  %r0 = anvil.cast %0 : tensor<2x5x32xbf16> to tensor<2x5x32xf32>
  %r1 = anvil.cast %1 : tensor<16x32xbf16> to tensor<16x32xf32>
  %r2 = anvil.cast %2 : tensor<16x16xbf16> to tensor<16x16xf32>
  %r3 = anvil.cast %3 : tensor<2x3x5x7xbf16> to tensor<2x3x5x7xf32>
  return %r0, %r1, %r2, %r3 : tensor<2x5x32xf32>, tensor<16x32xf32>, tensor<16x16xf32>, tensor<2x3x5x7xf32>
}

// GEMMs with bias and GELU epilogues (anvil-gemm-epilogues's ops;
// cuBLASLt's GELU_AUX_BIAS, DGELU_BGRAD, BGRADA and BIAS on CUDA,
// RuntimeABI.h's functions on the CPU): a linear layer's bias and GELU, the
// gradient through them of a given gradient and of a GEMM's product (a
// transposed weight, as dX = dY W2^T), a weight's gradient with its bias's
// (BGRADA), a linear layer with its bias alone (a transposed weight),
// each bf16 result rounded once; the interpreter does not round.
// tolerance: bf16
func.func @gemm_epilogues(%x: tensor<2x5x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>, %g: tensor<2x5x32xf32>, %dy: tensor<2x5x24xf32>, %w2: tensor<32x24xf32>, %w3: tensor<24x16xf32>, %b3: tensor<24xf32>) -> (tensor<2x5x32xf32>, tensor<2x5x32xf32>, tensor<2x5x32xf32>, tensor<32xf32>, tensor<2x5x32xf32>, tensor<32xf32>, tensor<16x24xf32>, tensor<24xf32>, tensor<2x5x24xf32>) {
  %x16 = anvil.cast %x : tensor<2x5x16xf32> to tensor<2x5x16xbf16>
  %w16 = anvil.cast %w : tensor<16x32xf32> to tensor<16x32xbf16>
  %b16 = anvil.cast %b : tensor<32xf32> to tensor<32xbf16>
  %g16 = anvil.cast %g : tensor<2x5x32xf32> to tensor<2x5x32xbf16>
  %dy16 = anvil.cast %dy : tensor<2x5x24xf32> to tensor<2x5x24xbf16>
  %w216 = anvil.cast %w2 : tensor<32x24xf32> to tensor<32x24xbf16>
  %y, %pre = anvil.linear_gelu %x16, %w16, %b16 : (tensor<2x5x16xbf16>, tensor<16x32xbf16>, tensor<32xbf16>) -> (tensor<2x5x32xbf16>, tensor<2x5x32xbf16>)
  %d, %db = anvil.gelu_bias_grad %g16, %pre : (tensor<2x5x32xbf16>, tensor<2x5x32xbf16>) -> (tensor<2x5x32xbf16>, tensor<32xbf16>)
  %d2, %db2 = anvil.matmul_gelu_bias_grad %dy16, %w216, %pre {transpose_rhs} : (tensor<2x5x24xbf16>, tensor<32x24xbf16>, tensor<2x5x32xbf16>) -> (tensor<2x5x32xbf16>, tensor<32xbf16>)
  %r0 = anvil.cast %y : tensor<2x5x32xbf16> to tensor<2x5x32xf32>
  %r1 = anvil.cast %pre : tensor<2x5x32xbf16> to tensor<2x5x32xf32>
  %r2 = anvil.cast %d : tensor<2x5x32xbf16> to tensor<2x5x32xf32>
  %r3 = anvil.cast %db : tensor<32xbf16> to tensor<32xf32>
  %r4 = anvil.cast %d2 : tensor<2x5x32xbf16> to tensor<2x5x32xf32>
  %r5 = anvil.cast %db2 : tensor<32xbf16> to tensor<32xf32>
  %xr = anvil.reshape %x16 : tensor<2x5x16xbf16> -> tensor<10x16xbf16>
  %dyr = anvil.reshape %dy16 : tensor<2x5x24xbf16> -> tensor<10x24xbf16>
  %dw3, %db3 = anvil.matmul_bias_grad %xr, %dyr : (tensor<10x16xbf16>, tensor<10x24xbf16>) -> (tensor<16x24xbf16>, tensor<24xbf16>)
  %r6 = anvil.cast %dw3 : tensor<16x24xbf16> to tensor<16x24xf32>
  %r7 = anvil.cast %db3 : tensor<24xbf16> to tensor<24xf32>
  %w316 = anvil.cast %w3 : tensor<24x16xf32> to tensor<24x16xbf16>
  %b316 = anvil.cast %b3 : tensor<24xf32> to tensor<24xbf16>
  %l = anvil.linear %x16, %w316, %b316 {transpose_rhs} : (tensor<2x5x16xbf16>, tensor<24x16xbf16>, tensor<24xbf16>) -> tensor<2x5x24xbf16>
  %r8 = anvil.cast %l : tensor<2x5x24xbf16> to tensor<2x5x24xf32>
  return %r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8 : tensor<2x5x32xf32>, tensor<2x5x32xf32>, tensor<2x5x32xf32>, tensor<32xf32>, tensor<2x5x32xf32>, tensor<32xf32>, tensor<16x24xf32>, tensor<24xf32>, tensor<2x5x24xf32>
}
