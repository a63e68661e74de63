// RUN: anvil-opt %s --split-input-file | anvil-opt --split-input-file | FileCheck %s
// RUN: anvil-opt %s --split-input-file --mlir-print-op-generic | anvil-opt --split-input-file | FileCheck %s

// Round trip of every anvil op in its custom and its generic form.

// Tests that constants and casts between every supported element type round-trip.
// CHECK-LABEL: func.func @constant_and_cast
func.func @constant_and_cast(%x: tensor<4x8xf32>) -> (tensor<4x8xbf16>, tensor<4x8xf16>, tensor<4x8xf8E4M3FN>, tensor<4x8xf8E5M2>, tensor<4x8xi1>, tensor<4x8xi32>, tensor<4x8xi64>, tensor<4x8xf32>) {
  // CHECK: %[[C:.+]] = anvil.constant dense<1.000000e+00> : tensor<4x8xf32>
  %c = anvil.constant dense<1.0> : tensor<4x8xf32>
  // CHECK: anvil.cast %{{.+}} : tensor<4x8xf32> to tensor<4x8xbf16>
  %0 = anvil.cast %x : tensor<4x8xf32> to tensor<4x8xbf16>
  // CHECK: anvil.cast %{{.+}} : tensor<4x8xbf16> to tensor<4x8xf16>
  %1 = anvil.cast %0 : tensor<4x8xbf16> to tensor<4x8xf16>
  // CHECK: anvil.cast %{{.+}} : tensor<4x8xf32> to tensor<4x8xf8E4M3FN>
  %2 = anvil.cast %x : tensor<4x8xf32> to tensor<4x8xf8E4M3FN>
  // CHECK: anvil.cast %{{.+}} : tensor<4x8xf32> to tensor<4x8xf8E5M2>
  %3 = anvil.cast %x : tensor<4x8xf32> to tensor<4x8xf8E5M2>
  // CHECK: anvil.cast %{{.+}} : tensor<4x8xf32> to tensor<4x8xi1>
  %4 = anvil.cast %x : tensor<4x8xf32> to tensor<4x8xi1>
  // CHECK: anvil.cast %{{.+}} : tensor<4x8xf32> to tensor<4x8xi32>
  %5 = anvil.cast %x : tensor<4x8xf32> to tensor<4x8xi32>
  // CHECK: anvil.cast %{{.+}} : tensor<4x8xi32> to tensor<4x8xi64>
  %6 = anvil.cast %5 : tensor<4x8xi32> to tensor<4x8xi64>
  return %0, %1, %2, %3, %4, %5, %6, %c : tensor<4x8xbf16>, tensor<4x8xf16>, tensor<4x8xf8E4M3FN>, tensor<4x8xf8E5M2>, tensor<4x8xi1>, tensor<4x8xi32>, tensor<4x8xi64>, tensor<4x8xf32>
}

// -----

// Tests that the binary elementwise ops round-trip.
// CHECK-LABEL: func.func @binary
// CHECK-SAME: (%[[A:.+]]: tensor<4x8xf32>, %[[B:.+]]: tensor<4x8xf32>, %[[I:.+]]: tensor<4x8xi32>
func.func @binary(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %i: tensor<4x8xi32>) -> tensor<4x8xf32> {
  // CHECK: anvil.add %[[A]], %[[B]] : tensor<4x8xf32>
  %0 = anvil.add %a, %b : tensor<4x8xf32>
  // CHECK: anvil.sub %[[A]], %[[B]] : tensor<4x8xf32>
  %1 = anvil.sub %a, %b : tensor<4x8xf32>
  // CHECK: anvil.mul %[[A]], %[[B]] : tensor<4x8xf32>
  %2 = anvil.mul %a, %b : tensor<4x8xf32>
  // CHECK: anvil.div %[[A]], %[[B]] : tensor<4x8xf32>
  %3 = anvil.div %a, %b : tensor<4x8xf32>
  // CHECK: anvil.pow %[[A]], %[[B]] : tensor<4x8xf32>
  %4 = anvil.pow %a, %b : tensor<4x8xf32>
  // CHECK: anvil.max %[[A]], %[[B]] : tensor<4x8xf32>
  %5 = anvil.max %a, %b : tensor<4x8xf32>
  // CHECK: anvil.min %[[A]], %[[B]] : tensor<4x8xf32>
  %6 = anvil.min %a, %b : tensor<4x8xf32>
  // CHECK: anvil.add %[[I]], %[[I]] : tensor<4x8xi32>
  %7 = anvil.add %i, %i : tensor<4x8xi32>
  return %6 : tensor<4x8xf32>
}

// -----

// Tests that the unary elementwise ops and activations round-trip.
// CHECK-LABEL: func.func @unary
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xbf16>)
func.func @unary(%x: tensor<2x3xbf16>) -> tensor<2x3xbf16> {
  // CHECK: anvil.neg %[[X]] : tensor<2x3xbf16>
  %0 = anvil.neg %x : tensor<2x3xbf16>
  // CHECK: anvil.abs %[[X]] : tensor<2x3xbf16>
  %1 = anvil.abs %x : tensor<2x3xbf16>
  // CHECK: anvil.exp %[[X]] : tensor<2x3xbf16>
  %2 = anvil.exp %x : tensor<2x3xbf16>
  // CHECK: anvil.log %[[X]] : tensor<2x3xbf16>
  %3 = anvil.log %x : tensor<2x3xbf16>
  // CHECK: anvil.sqrt %[[X]] : tensor<2x3xbf16>
  %4 = anvil.sqrt %x : tensor<2x3xbf16>
  // CHECK: anvil.rsqrt %[[X]] : tensor<2x3xbf16>
  %5 = anvil.rsqrt %x : tensor<2x3xbf16>
  // CHECK: anvil.tanh %[[X]] : tensor<2x3xbf16>
  %6 = anvil.tanh %x : tensor<2x3xbf16>
  // CHECK: anvil.cos %[[X]] : tensor<2x3xbf16>
  %c = anvil.cos %x : tensor<2x3xbf16>
  // CHECK: anvil.sin %[[X]] : tensor<2x3xbf16>
  %s = anvil.sin %x : tensor<2x3xbf16>
  // CHECK: anvil.erf %[[X]] : tensor<2x3xbf16>
  %7 = anvil.erf %x : tensor<2x3xbf16>
  // CHECK: anvil.sigmoid %[[X]] : tensor<2x3xbf16>
  %8 = anvil.sigmoid %x : tensor<2x3xbf16>
  // CHECK: anvil.silu %[[X]] : tensor<2x3xbf16>
  %9 = anvil.silu %x : tensor<2x3xbf16>
  // CHECK: anvil.relu %[[X]] : tensor<2x3xbf16>
  %10 = anvil.relu %x : tensor<2x3xbf16>
  // CHECK: anvil.gelu erf %[[X]] : tensor<2x3xbf16>
  %11 = anvil.gelu erf %x : tensor<2x3xbf16>
  // CHECK: anvil.gelu tanh %[[X]] : tensor<2x3xbf16>
  %12 = anvil.gelu tanh %x : tensor<2x3xbf16>
  return %12 : tensor<2x3xbf16>
}

// -----

// Tests that comparisons, select and seeded dropout round-trip.
// CHECK-LABEL: func.func @compare_select_dropout
// CHECK-SAME: (%[[A:.+]]: tensor<4xf32>, %[[B:.+]]: tensor<4xf32>, %[[S:.+]]: tensor<i64>)
func.func @compare_select_dropout(%a: tensor<4xf32>, %b: tensor<4xf32>, %seed: tensor<i64>) -> tensor<4xf32> {
  // CHECK: %[[M:.+]] = anvil.compare ge, %[[A]], %[[B]] : tensor<4xf32>
  %m = anvil.compare ge, %a, %b : tensor<4xf32>
  // CHECK: anvil.compare eq, %[[A]], %[[B]] : tensor<4xf32>
  %e = anvil.compare eq, %a, %b : tensor<4xf32>
  // CHECK: anvil.stop_gradient %[[A]] : tensor<4xf32>
  %sg = anvil.stop_gradient %a : tensor<4xf32>
  // CHECK: %[[Y:.+]] = anvil.select %[[M]], %[[A]], %[[B]] : tensor<4xf32>
  %y = anvil.select %m, %a, %b : tensor<4xf32>
  // CHECK: anvil.dropout %[[Y]], %[[S]] rate = 1.000000e-01 : tensor<4xf32>
  %d = anvil.dropout %y, %seed rate = 0.1 : tensor<4xf32>
  return %d : tensor<4xf32>
}

// -----

// Tests that the shape and data movement ops round-trip.
// CHECK-LABEL: func.func @data_movement
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>, %[[IDX:.+]]: tensor<5xi64>, %{{.+}}: tensor<f32>)
func.func @data_movement(%x: tensor<2x3x4xf32>, %idx: tensor<5xi64>, %scalar: tensor<f32>) -> tensor<2x12xf32> {
  // CHECK: anvil.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<2x12xf32>
  %0 = anvil.reshape %x : tensor<2x3x4xf32> -> tensor<2x12xf32>
  // CHECK: anvil.transpose %[[X]], [0, 2, 1] : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
  %1 = anvil.transpose %x, [0, 2, 1] : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
  // CHECK: anvil.broadcast %[[X]], dims = [0, 2, 3] : tensor<2x3x4xf32> -> tensor<2x7x3x4xf32>
  %2 = anvil.broadcast %x, dims = [0, 2, 3] : tensor<2x3x4xf32> -> tensor<2x7x3x4xf32>
  // CHECK: anvil.slice %[[X]] [0:2:1, 1:3:1, 0:4:3] : tensor<2x3x4xf32> -> tensor<2x2x2xf32>
  %3 = anvil.slice %x [0:2:1, 1:3:1, 0:4:3] : tensor<2x3x4xf32> -> tensor<2x2x2xf32>
  // CHECK: anvil.concat %[[X]], %[[X]] dim = 1 : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x6x4xf32>
  %4 = anvil.concat %x, %x dim = 1 : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x6x4xf32>
  // CHECK: anvil.split %[[X]] dim = 2 sizes [1, 3] : tensor<2x3x4xf32> -> tensor<2x3x1xf32>, tensor<2x3x3xf32>
  %5:2 = anvil.split %x dim = 2 sizes [1, 3] : tensor<2x3x4xf32> -> tensor<2x3x1xf32>, tensor<2x3x3xf32>
  // CHECK: anvil.pad %[[X]] low [0, 1, 0] high [0, 0, 2] : tensor<2x3x4xf32> -> tensor<2x4x6xf32>
  %6 = anvil.pad %x low [0, 1, 0] high [0, 0, 2] : tensor<2x3x4xf32> -> tensor<2x4x6xf32>
  // CHECK: anvil.pad %[[X]] low [0, 0, 0] high [1, 0, 0] {value = -1.000000e+00 : f64}
  %7 = anvil.pad %x low [0, 0, 0] high [1, 0, 0] {value = -1.0 : f64} : tensor<2x3x4xf32> -> tensor<3x3x4xf32>
  // CHECK: anvil.slice %{{.+}} [] : tensor<f32> -> tensor<f32>
  %s0 = anvil.slice %scalar [] : tensor<f32> -> tensor<f32>
  // CHECK: anvil.gather %[[X]][%[[IDX]]] axis = 1 : (tensor<2x3x4xf32>, tensor<5xi64>) -> tensor<2x5x4xf32>
  %8 = anvil.gather %x[%idx] axis = 1 : (tensor<2x3x4xf32>, tensor<5xi64>) -> tensor<2x5x4xf32>
  return %0 : tensor<2x12xf32>
}

// -----

// Tests that reductions, argmax and the softmaxes round-trip.
// CHECK-LABEL: func.func @reductions
// CHECK-SAME: (%[[X:.+]]: tensor<4x8x16xf32>)
func.func @reductions(%x: tensor<4x8x16xf32>) -> tensor<4xf32> {
  // CHECK: anvil.reduce_sum %[[X]] dims [1, 2] : tensor<4x8x16xf32> -> tensor<4xf32>
  %0 = anvil.reduce_sum %x dims [1, 2] : tensor<4x8x16xf32> -> tensor<4xf32>
  // CHECK: anvil.reduce_mean %[[X]] dims [2] keep_dims : tensor<4x8x16xf32> -> tensor<4x8x1xf32>
  %1 = anvil.reduce_mean %x dims [2] keep_dims : tensor<4x8x16xf32> -> tensor<4x8x1xf32>
  // CHECK: anvil.reduce_max %[[X]] dims [0] : tensor<4x8x16xf32> -> tensor<8x16xf32>
  %2 = anvil.reduce_max %x dims [0] : tensor<4x8x16xf32> -> tensor<8x16xf32>
  // CHECK: anvil.reduce_min %[[X]] dims [0, 1, 2] : tensor<4x8x16xf32> -> tensor<f32>
  %3 = anvil.reduce_min %x dims [0, 1, 2] : tensor<4x8x16xf32> -> tensor<f32>
  // CHECK: anvil.argmax %[[X]] dim = 2 : tensor<4x8x16xf32> -> tensor<4x8xi64>
  %4 = anvil.argmax %x dim = 2 : tensor<4x8x16xf32> -> tensor<4x8xi64>
  // CHECK: anvil.argmax %[[X]] dim = 0 keep_dims : tensor<4x8x16xf32> -> tensor<1x8x16xi64>
  %5 = anvil.argmax %x dim = 0 keep_dims : tensor<4x8x16xf32> -> tensor<1x8x16xi64>
  // CHECK: anvil.softmax %[[X]] dim = 2 : tensor<4x8x16xf32>
  %6 = anvil.softmax %x dim = 2 : tensor<4x8x16xf32>
  // CHECK: anvil.log_softmax %[[X]] dim = 1 : tensor<4x8x16xf32>
  %7 = anvil.log_softmax %x dim = 1 : tensor<4x8x16xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that matmul round-trips with shared weights, batches and transposes.
// CHECK-LABEL: func.func @matmul
func.func @matmul(%x: tensor<8x16x32xf32>, %w: tensor<32x64xf32>, %q: tensor<2x4x16x8xbf16>, %k: tensor<2x4x16x8xbf16>) -> tensor<8x16x64xf32> {
  // CHECK: anvil.matmul %{{.+}}, %{{.+}} : (tensor<8x16x32xf32>, tensor<32x64xf32>) -> tensor<8x16x64xf32>
  %0 = anvil.matmul %x, %w : (tensor<8x16x32xf32>, tensor<32x64xf32>) -> tensor<8x16x64xf32>
  // CHECK: anvil.matmul %{{.+}}, %{{.+}} {transpose_rhs} : (tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>) -> tensor<2x4x16x16xbf16>
  %1 = anvil.matmul %q, %k {transpose_rhs} : (tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>) -> tensor<2x4x16x16xbf16>
  // CHECK: anvil.matmul %{{.+}}, %{{.+}} {transpose_lhs} : (tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>) -> tensor<2x4x8x8xbf16>
  %2 = anvil.matmul %q, %k {transpose_lhs} : (tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16>) -> tensor<2x4x8x8xbf16>
  return %0 : tensor<8x16x64xf32>
}

// -----

// Tests that the normalizations round-trip, with and without scale and bias.
// CHECK-LABEL: func.func @norms
func.func @norms(%x: tensor<2x8x16xf32>, %g: tensor<16xf32>, %img: tensor<2x8x4x4xf32>, %c: tensor<8xf32>) -> tensor<2x8x16xf32> {
  // CHECK: anvil.layer_norm %{{.+}} scale(%{{.+}}) bias(%{{.+}}) axis = 2 : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %0 = anvil.layer_norm %x scale(%g) bias(%g) axis = 2 : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  // CHECK: anvil.layer_norm %{{.+}} bias(%{{.+}}) axis = 2 {epsilon = {{.+}} : f64} : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %1 = anvil.layer_norm %x bias(%g) axis = 2 {epsilon = 1.0e-6 : f64} : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  // CHECK: anvil.rms_norm %{{.+}} scale(%{{.+}}) axis = 2 : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %2 = anvil.rms_norm %x scale(%g) axis = 2 : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  // CHECK: anvil.rms_norm %{{.+}} axis = 1 : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %3 = anvil.rms_norm %x axis = 1 : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  // CHECK: anvil.group_norm %{{.+}} scale(%{{.+}}) bias(%{{.+}}) groups = 4 : (tensor<2x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8x4x4xf32>
  %4 = anvil.group_norm %img scale(%c) bias(%c) groups = 4 : (tensor<2x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8x4x4xf32>
  // CHECK: anvil.instance_norm %{{.+}} scale(%{{.+}}) : (tensor<2x8x4x4xf32>, tensor<8xf32>) -> tensor<2x8x4x4xf32>
  %5 = anvil.instance_norm %img scale(%c) : (tensor<2x8x4x4xf32>, tensor<8xf32>) -> tensor<2x8x4x4xf32>
  // CHECK: anvil.batch_norm_train %{{.+}}, %{{.+}}, %{{.+}} : (tensor<2x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>)
  %6:3 = anvil.batch_norm_train %img, %c, %c : (tensor<2x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>)
  // CHECK: anvil.batch_norm_inference %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} {epsilon = 1.000000e-03 : f64}
  %7 = anvil.batch_norm_inference %img, %c, %c, %6#1, %6#2 {epsilon = 1.0e-3 : f64} : (tensor<2x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8x4x4xf32>
  return %0 : tensor<2x8x16xf32>
}

// -----

// Tests that the embedding, RoPE and attention ops round-trip.
// CHECK-LABEL: func.func @transformer
func.func @transformer(%wte: tensor<100x16xf32>, %tok: tensor<2x8xi32>, %bags: tensor<2x3xi64>,
                      %q: tensor<2x4x8x16xf32>, %kv: tensor<2x2x8x16xf32>, %cos: tensor<8x8xf32>,
                      %mask: tensor<8x8xf32>, %mask4: tensor<2x1x8x8xf32>, %kx: tensor<2x2x5x16xf32>) -> tensor<2x4x8x16xf32> {
  // CHECK: anvil.embedding %{{.+}}[%{{.+}}] : (tensor<100x16xf32>, tensor<2x8xi32>) -> tensor<2x8x16xf32>
  %0 = anvil.embedding %wte[%tok] : (tensor<100x16xf32>, tensor<2x8xi32>) -> tensor<2x8x16xf32>
  // CHECK: anvil.embedding_bag sum %{{.+}}[%{{.+}}] : (tensor<100x16xf32>, tensor<2x3xi64>) -> tensor<2x16xf32>
  %1 = anvil.embedding_bag sum %wte[%bags] : (tensor<100x16xf32>, tensor<2x3xi64>) -> tensor<2x16xf32>
  // CHECK: anvil.embedding_grad %{{.+}}[%{{.+}}] rows = 100 : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> tensor<100x16xf32>
  %eg = anvil.embedding_grad %0[%tok] rows = 100 : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> tensor<100x16xf32>
  // CHECK: anvil.embedding_bag mean
  %2 = anvil.embedding_bag mean %wte[%bags] : (tensor<100x16xf32>, tensor<2x3xi64>) -> tensor<2x16xf32>
  // CHECK: anvil.rope %{{.+}}, %{{.+}}, %{{.+}} : (tensor<2x4x8x16xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8x16xf32>
  %3 = anvil.rope %q, %cos, %cos : (tensor<2x4x8x16xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8x16xf32>
  // CHECK: anvil.rope %{{.+}}, %{{.+}}, %{{.+}} {interleaved}
  %4 = anvil.rope %q, %cos, %cos {interleaved} : (tensor<2x4x8x16xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8x16xf32>
  // CHECK: anvil.attention %{{.+}}, %{{.+}}, %{{.+}} {causal} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
  %5 = anvil.attention %3, %kv, %kv {causal} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
  // CHECK: anvil.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}}) {scale = 2.500000e-01 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<8x8xf32>) -> tensor<2x4x8x16xf32>
  %6 = anvil.attention %q, %kv, %kv mask(%mask) {scale = 0.25 : f64} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<8x8xf32>) -> tensor<2x4x8x16xf32>
  // CHECK: anvil.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}}) : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x1x8x8xf32>)
  %7 = anvil.attention %q, %kv, %kv mask(%mask4) : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x1x8x8xf32>) -> tensor<2x4x8x16xf32>
  // Cross-attention: 5 keys for 8 queries.
  // CHECK: anvil.attention %{{.+}}, %{{.+}}, %{{.+}} : (tensor<2x4x8x16xf32>, tensor<2x2x5x16xf32>, tensor<2x2x5x16xf32>) -> tensor<2x4x8x16xf32>
  %8 = anvil.attention %q, %kx, %kx : (tensor<2x4x8x16xf32>, tensor<2x2x5x16xf32>, tensor<2x2x5x16xf32>) -> tensor<2x4x8x16xf32>
  return %5 : tensor<2x4x8x16xf32>
}

// -----

// Tests that convolutions (1-D, 2-D, 3-D, grouped, transposed), pooling and
// upsampling round-trip.
// CHECK-LABEL: func.func @conv_pool
func.func @conv_pool(%x1: tensor<2x4x16xf32>, %w1: tensor<8x4x3xf32>,
                     %x2: tensor<2x4x16x16xf32>, %w2: tensor<8x2x3x3xf32>, %b: tensor<8xf32>,
                     %x3: tensor<1x4x8x8x8xf32>, %w3: tensor<4x2x2x2x2xf32>) -> tensor<2x8x14xf32> {
  // CHECK: anvil.conv %{{.+}}, %{{.+}} stride [1] pad_low [0] pad_high [0] dilation [1] : (tensor<2x4x16xf32>, tensor<8x4x3xf32>) -> tensor<2x8x14xf32>
  %0 = anvil.conv %x1, %w1 stride [1] pad_low [0] pad_high [0] dilation [1] : (tensor<2x4x16xf32>, tensor<8x4x3xf32>) -> tensor<2x8x14xf32>
  // CHECK: anvil.conv %{{.+}}, %{{.+}}, %{{.+}} stride [2, 2] pad_low [1, 1] pad_high [1, 1] dilation [1, 1] {groups = 2 : i64} : (tensor<2x4x16x16xf32>, tensor<8x2x3x3xf32>, tensor<8xf32>) -> tensor<2x8x8x8xf32>
  %1 = anvil.conv %x2, %w2, %b stride [2, 2] pad_low [1, 1] pad_high [1, 1] dilation [1, 1] {groups = 2 : i64} : (tensor<2x4x16x16xf32>, tensor<8x2x3x3xf32>, tensor<8xf32>) -> tensor<2x8x8x8xf32>
  // CHECK: anvil.conv %{{.+}}, %{{.+}} stride [1, 1] pad_low [2, 2] pad_high [2, 2] dilation [2, 2] {groups = 2 : i64}
  %2 = anvil.conv %x2, %w2 stride [1, 1] pad_low [2, 2] pad_high [2, 2] dilation [2, 2] {groups = 2 : i64} : (tensor<2x4x16x16xf32>, tensor<8x2x3x3xf32>) -> tensor<2x8x16x16xf32>
  // CHECK: anvil.conv_transpose %{{.+}}, %{{.+}} stride [2, 2, 2] pad_low [0, 0, 0] pad_high [0, 0, 0] dilation [1, 1, 1] output_padding [0, 0, 0] : (tensor<1x4x8x8x8xf32>, tensor<4x2x2x2x2xf32>) -> tensor<1x2x16x16x16xf32>
  %3 = anvil.conv_transpose %x3, %w3 stride [2, 2, 2] pad_low [0, 0, 0] pad_high [0, 0, 0] dilation [1, 1, 1] output_padding [0, 0, 0] : (tensor<1x4x8x8x8xf32>, tensor<4x2x2x2x2xf32>) -> tensor<1x2x16x16x16xf32>
  // CHECK: anvil.conv_filter_grad %{{.+}}, %{{.+}} kernel [3, 3] stride [2, 2] pad_low [1, 1] pad_high [1, 1] dilation [1, 1] {groups = 2 : i64} : (tensor<2x4x16x16xf32>, tensor<2x8x8x8xf32>) -> tensor<8x2x3x3xf32>
  %fg = anvil.conv_filter_grad %x2, %1 kernel [3, 3] stride [2, 2] pad_low [1, 1] pad_high [1, 1] dilation [1, 1] {groups = 2 : i64} : (tensor<2x4x16x16xf32>, tensor<2x8x8x8xf32>) -> tensor<8x2x3x3xf32>
  // CHECK: anvil.max_pool %{{.+}} window [3, 3] stride [2, 2] pad_low [1, 1] pad_high [1, 1] : tensor<2x4x16x16xf32> -> tensor<2x4x8x8xf32>
  %4 = anvil.max_pool %x2 window [3, 3] stride [2, 2] pad_low [1, 1] pad_high [1, 1] : tensor<2x4x16x16xf32> -> tensor<2x4x8x8xf32>
  // CHECK: anvil.max_pool_grad %{{.+}}, %{{.+}} window [3, 3] stride [2, 2] pad_low [1, 1] pad_high [1, 1] : (tensor<2x4x16x16xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x16x16xf32>
  %pg = anvil.max_pool_grad %x2, %4 window [3, 3] stride [2, 2] pad_low [1, 1] pad_high [1, 1] : (tensor<2x4x16x16xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x16x16xf32>
  // CHECK: anvil.avg_pool %{{.+}} window [2, 2] stride [2, 2] pad_low [0, 0] pad_high [0, 0] {count_include_pad} : tensor<2x4x16x16xf32> -> tensor<2x4x8x8xf32>
  %5 = anvil.avg_pool %x2 window [2, 2] stride [2, 2] pad_low [0, 0] pad_high [0, 0] {count_include_pad} : tensor<2x4x16x16xf32> -> tensor<2x4x8x8xf32>
  // CHECK: anvil.upsample_nearest %{{.+}} scale [2, 2] : tensor<2x4x16x16xf32> -> tensor<2x4x32x32xf32>
  %6 = anvil.upsample_nearest %x2 scale [2, 2] : tensor<2x4x16x16xf32> -> tensor<2x4x32x32xf32>
  return %0 : tensor<2x8x14xf32>
}

// -----

// Tests that the losses round-trip with every reduction.
// CHECK-LABEL: func.func @losses
func.func @losses(%logits: tensor<4x10xf32>, %labels: tensor<4xi64>, %p: tensor<2x3x4x4x4xf32>, %y: tensor<4x10xf32>) -> tensor<f32> {
  // CHECK: anvil.cross_entropy mean %{{.+}}, %{{.+}} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  %0 = anvil.cross_entropy mean %logits, %labels : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  // CHECK: anvil.cross_entropy none %{{.+}}, %{{.+}} {ignore_index = 0 : i64, label_smoothing = 1.000000e-01 : f64} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<4xf32>
  %1 = anvil.cross_entropy none %logits, %labels {ignore_index = 0 : i64, label_smoothing = 0.1 : f64} : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<4xf32>
  // CHECK: anvil.mse_loss sum %{{.+}}, %{{.+}} : (tensor<4x10xf32>, tensor<4x10xf32>) -> tensor<f32>
  %2 = anvil.mse_loss sum %logits, %y : (tensor<4x10xf32>, tensor<4x10xf32>) -> tensor<f32>
  // CHECK: anvil.bce_with_logits none %{{.+}}, %{{.+}} : (tensor<4x10xf32>, tensor<4x10xf32>) -> tensor<4x10xf32>
  %3 = anvil.bce_with_logits none %logits, %y : (tensor<4x10xf32>, tensor<4x10xf32>) -> tensor<4x10xf32>
  // CHECK: anvil.focal_loss sum %{{.+}}, %{{.+}} {gamma = 1.500000e+00 : f64} : (tensor<4x10xf32>, tensor<4x10xf32>) -> tensor<f32>
  %4 = anvil.focal_loss sum %logits, %y {gamma = 1.5 : f64} : (tensor<4x10xf32>, tensor<4x10xf32>) -> tensor<f32>
  // CHECK: anvil.dice_loss mean %{{.+}}, %{{.+}} : (tensor<2x3x4x4x4xf32>, tensor<2x3x4x4x4xf32>) -> tensor<f32>
  %5 = anvil.dice_loss mean %p, %p : (tensor<2x3x4x4x4xf32>, tensor<2x3x4x4x4xf32>) -> tensor<f32>
  // CHECK: anvil.dice_loss none %{{.+}}, %{{.+}} : (tensor<2x3x4x4x4xf32>, tensor<2x3x4x4x4xf32>) -> tensor<2x3xf32>
  %6 = anvil.dice_loss none %p, %p : (tensor<2x3x4x4x4xf32>, tensor<2x3x4x4x4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<f32>
}

// -----

// Tests the collectives, on a module with a device mesh.
// CHECK: module attributes {anvil.mesh = {dp = 4 : i64}}
// CHECK-LABEL: func.func @collectives
module attributes {anvil.mesh = {dp = 4 : i64}} {
func.func @collectives(%g: tensor<8x3xf32>) -> tensor<8x3xf32> {
  // CHECK: anvil.all_reduce mean %{{.+}} axis "dp" : tensor<8x3xf32>
  %0 = anvil.all_reduce mean %g axis "dp" : tensor<8x3xf32>
  // CHECK: anvil.all_reduce sum %{{.+}} axis "dp" : tensor<8x3xf32>
  %1 = anvil.all_reduce sum %0 axis "dp" : tensor<8x3xf32>
  // CHECK: anvil.all_reduce max %{{.+}} axis "dp" : tensor<8x3xf32>
  %2 = anvil.all_reduce max %1 axis "dp" : tensor<8x3xf32>
  // CHECK: anvil.reduce_scatter mean %{{.+}} axis "dp" : tensor<8x3xf32> -> tensor<2x3xf32>
  %3 = anvil.reduce_scatter mean %2 axis "dp" : tensor<8x3xf32> -> tensor<2x3xf32>
  // CHECK: anvil.axis_slice %{{.+}} axis "dp" : tensor<8x3xf32> -> tensor<2x3xf32>
  %4 = anvil.axis_slice %2 axis "dp" : tensor<8x3xf32> -> tensor<2x3xf32>
  %5 = anvil.add %3, %4 : tensor<2x3xf32>
  // CHECK: anvil.all_gather %{{.+}} axis "dp" : tensor<2x3xf32> -> tensor<8x3xf32>
  %6 = anvil.all_gather %5 axis "dp" : tensor<2x3xf32> -> tensor<8x3xf32>
  return %6 : tensor<8x3xf32>
}
}
