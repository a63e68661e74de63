// RUN: anvil-opt %s --split-input-file --verify-diagnostics

// One case per verifier message of the anvil ops. Ops whose result type is
// inferred also report "failed to infer returned types" after the reason.

func.func @dynamic_shape(%x: tensor<?x4xf32>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor}}
  %0 = anvil.exp %x : tensor<?x4xf32>
  return
}

// -----

func.func @integer_exp(%x: tensor<4xi32>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor of 64-bit float or 32-bit float}}
  %0 = anvil.exp %x : tensor<4xi32>
  return
}

// -----

// expected-note@+1 {{prior use here}}
func.func @mismatched_binary(%a: tensor<4xf32>, %b: tensor<5xf32>) {
  // expected-error@+1 {{use of value '%b' expects different type than prior uses}}
  %0 = anvil.add %a, %b : tensor<4xf32>
  return
}

// -----

func.func @binary_generic_mismatch(%a: tensor<4xf32>, %b: tensor<5xf32>) {
  // expected-error@+1 {{all non-scalar operands/results must have the same shape and base type}}
  %0 = "anvil.add"(%a, %b) : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @cast_shape(%x: tensor<4xf32>) {
  // expected-error@+1 {{all non-scalar operands/results must have the same shape and base type}}
  %0 = anvil.cast %x : tensor<4xf32> to tensor<5xbf16>
  return
}

// -----

func.func @select_condition(%c: tensor<4xi32>, %a: tensor<4xf32>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor of 1-bit signless integer values}}
  %0 = "anvil.select"(%c, %a, %a) : (tensor<4xi32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @compare_result(%a: tensor<4xf32>) {
  // expected-error@+1 {{result is an i1 tensor of the operands' shape}}
  %0 = "anvil.compare"(%a, %a) {direction = 2 : i32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<5xi1>
  return
}

// -----

func.func @dropout_rate(%x: tensor<4xf32>, %s: tensor<i64>) {
  // expected-error@+1 {{rate = 1.0 must lie in [0, 1)}}
  %0 = anvil.dropout %x, %s rate = 1.0 : tensor<4xf32>
  return
}

// -----

func.func @dropout_seed(%x: tensor<4xf32>, %s: tensor<2xi64>) {
  // expected-error@+1 {{operand #1 must be 0D tensor of 64-bit signless integer values}}
  %0 = "anvil.dropout"(%x, %s) {rate = 0.1 : f64} : (tensor<4xf32>, tensor<2xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @reshape_count(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{operand has 6 elements ('tensor<2x3xf32>') but the result has 8 ('tensor<2x4xf32>')}}
  %0 = anvil.reshape %x : tensor<2x3xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @transpose_rank(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{permutation [0, 1, 2] has 3 entries, but the operand has rank 2}}
  %0 = anvil.transpose %x, [0, 1, 2] : tensor<2x3xf32> -> tensor<3x2xf32>
  return
}

// -----

func.func @transpose_not_permutation(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{permutation [1, 1] is not a permutation of [0, 2)}}
  %0 = anvil.transpose %x, [1, 1] : tensor<2x3xf32> -> tensor<3x3xf32>
  return
}

// -----

func.func @transpose_wrong_result(%x: tensor<2x3xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{inferred type(s) 'tensor<3x2xf32>' are incompatible with return type(s) of operation 'tensor<2x3xf32>'}}
  %0 = anvil.transpose %x, [1, 0] : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @broadcast_dims_count(%x: tensor<3xf32>) {
  // expected-error@+1 {{dims [0, 1] has 2 entries, but the operand has rank 1}}
  %0 = anvil.broadcast %x, dims = [0, 1] : tensor<3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @broadcast_dims_range(%x: tensor<3xf32>) {
  // expected-error@+1 {{dims[0] = 2 is out of range for the result rank 2}}
  %0 = anvil.broadcast %x, dims = [2] : tensor<3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @broadcast_dims_order(%x: tensor<3x1xf32>) {
  // expected-error@+1 {{dims [1, 0] must be strictly increasing}}
  %0 = anvil.broadcast %x, dims = [1, 0] : tensor<3x1xf32> -> tensor<3x3xf32>
  return
}

// -----

func.func @broadcast_size(%x: tensor<3xf32>) {
  // expected-error@+1 {{operand dimension 0 has size 3, which can only broadcast to 3 or from 1, but result dimension 1 has size 4}}
  %0 = anvil.broadcast %x, dims = [1] : tensor<3xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @slice_ranges(%x: tensor<4x4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{has 1 ranges, but the operand has rank 2}}
  %0 = anvil.slice %x [0:2:1] : tensor<4x4xf32> -> tensor<2xf32>
  return
}

// -----

func.func @slice_stride(%x: tensor<4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{stride of dimension 0 is 0, expected at least 1}}
  %0 = anvil.slice %x [0:2:0] : tensor<4xf32> -> tensor<2xf32>
  return
}

// -----

func.func @slice_bounds(%x: tensor<4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{range 2:5 of dimension 0 is not within [0, 4]}}
  %0 = anvil.slice %x [2:5:1] : tensor<4xf32> -> tensor<3xf32>
  return
}

// -----

func.func @slice_huge_stride(%x: tensor<4xf32>) {
  // A stride larger than the extent takes one element (no overflow).
  %0 = anvil.slice %x [0:4:9223372036854775807] : tensor<4xf32> -> tensor<1xf32>
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{inferred type(s) 'tensor<1xf32>' are incompatible with return type(s) of operation 'tensor<0xf32>'}}
  %1 = anvil.slice %x [0:4:9223372036854775807] : tensor<4xf32> -> tensor<0xf32>
  return
}

// -----

func.func @concat_empty() {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{needs at least one input}}
  %0 = anvil.concat dim = 0 : () -> tensor<4xf32>
  return
}

// -----

func.func @concat_dim(%a: tensor<4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{dim = 1 is out of range for rank 1 (expected 0 <= dim < 1)}}
  %0 = anvil.concat %a, %a dim = 1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @concat_types(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{input #1 has type 'tensor<4xf16>', which does not match input #0 of type 'tensor<4xf32>'}}
  %0 = anvil.concat %a, %b dim = 0 : (tensor<4xf32>, tensor<4xf16>) -> tensor<8xf32>
  return
}

// -----

func.func @concat_other_dim(%a: tensor<2x4xf32>, %b: tensor<3x5xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{input #1 has size 5 in dimension 1 but input #0 has 4 (only dimension 0 may differ)}}
  %0 = anvil.concat %a, %b dim = 0 : (tensor<2x4xf32>, tensor<3x5xf32>) -> tensor<5x4xf32>
  return
}

// -----

func.func @split_sum(%x: tensor<6xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{sizes [2, 3] add up to 5, but dimension 0 of the operand has size 6}}
  %0:2 = anvil.split %x dim = 0 sizes [2, 3] : tensor<6xf32> -> tensor<2xf32>, tensor<3xf32>
  return
}

// -----

func.func @split_positive(%x: tensor<6xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{sizes [0, 6] must all be positive}}
  %0:2 = anvil.split %x dim = 0 sizes [0, 6] : tensor<6xf32> -> tensor<0xf32>, tensor<6xf32>
  return
}

// -----

func.func @split_empty(%x: tensor<0x3xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{sizes must name at least one piece}}
  "anvil.split"(%x) {dim = 0 : i64, sizes = array<i64>} : (tensor<0x3xf32>) -> ()
  return
}

// -----

func.func @split_overflow(%x: tensor<2xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{add up to more than 2^63}}
  %0:3 = anvil.split %x dim = 0 sizes [9223372036854775807, 9223372036854775807, 2] : tensor<2xf32> -> tensor<9223372036854775807xf32>, tensor<9223372036854775807xf32>, tensor<2xf32>
  return
}

// -----

func.func @concat_overflow(%x: tensor<9223372036854775807xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{the concatenated dimension 0 is too large}}
  %0 = anvil.concat %x, %x dim = 0 : (tensor<9223372036854775807xf32>, tensor<9223372036854775807xf32>) -> tensor<1xf32>
  return
}

// -----

func.func @split_dim(%x: tensor<6xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{dim = 3 is out of range for rank 1}}
  %0 = anvil.split %x dim = 3 sizes [6] : tensor<6xf32> -> tensor<6xf32>
  return
}

// -----

func.func @pad_count(%x: tensor<4x4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{low [1] and high [1] need one entry per dimension of the rank-2 operand}}
  %0 = anvil.pad %x low [1] high [1] : tensor<4x4xf32> -> tensor<6x4xf32>
  return
}

// -----

func.func @pad_negative(%x: tensor<4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{padding of dimension 0 is negative (low -1, high 0)}}
  %0 = anvil.pad %x low [-1] high [0] : tensor<4xf32> -> tensor<3xf32>
  return
}

// -----

func.func @pad_integer_value(%x: tensor<4xi32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{padding value 0.5 is not representable in the element type 'i32'}}
  %0 = anvil.pad %x low [1] high [0] {value = 0.5 : f64} : tensor<4xi32> -> tensor<5xi32>
  return
}

// -----

func.func @pad_overflow(%x: tensor<4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{padded shape is too large}}
  %0 = anvil.pad %x low [9223372036854775807] high [0] : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @pad_integer_range(%x: tensor<4xi32>, %b: tensor<4xi1>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{padding value 1.0e+20 is not representable in the element type 'i32'}}
  %0 = anvil.pad %x low [1] high [0] {value = 1.0e20 : f64} : tensor<4xi32> -> tensor<5xi32>
  return
}

// -----

func.func @pad_bool_range(%b: tensor<4xi1>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{padding value 7.0 is not representable in the element type 'i1'}}
  %0 = anvil.pad %b low [1] high [0] {value = 7.0 : f64} : tensor<4xi1> -> tensor<5xi1>
  return
}

// -----

func.func @gather_axis(%x: tensor<4xf32>, %i: tensor<2xi32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{axis = 1 is out of range for rank 1}}
  %0 = anvil.gather %x[%i] axis = 1 : (tensor<4xf32>, tensor<2xi32>) -> tensor<2xf32>
  return
}

// -----

func.func @gather_float_indices(%x: tensor<4xf32>, %i: tensor<2xf32>) {
  // expected-error@+1 {{operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = "anvil.gather"(%x, %i) {axis = 0 : i64} : (tensor<4xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @reduce_range(%x: tensor<4x4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{dims entry = 2 is out of range for rank 2}}
  %0 = anvil.reduce_sum %x dims [2] : tensor<4x4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_order(%x: tensor<4x4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{dims [1, 0] must be strictly increasing}}
  %0 = anvil.reduce_max %x dims [1, 0] : tensor<4x4xf32> -> tensor<f32>
  return
}

// -----

func.func @reduce_mean_int(%x: tensor<4xi32>) {
  // expected-error@+1 {{operand #0 must be statically shaped tensor of 64-bit float}}
  %0 = "anvil.reduce_mean"(%x) {dims = array<i64: 0>} : (tensor<4xi32>) -> tensor<i32>
  return
}

// -----

func.func @argmax_dim(%x: tensor<4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{dim = -1 is out of range for rank 1}}
  %0 = anvil.argmax %x dim = -1 : tensor<4xf32> -> tensor<i64>
  return
}

// -----

func.func @softmax_dim(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'anvil.softmax' op dim = 2 is out of range for rank 2 (expected 0 <= dim < 2)}}
  %0 = anvil.softmax %x dim = 2 : tensor<4x8xf32>
  return
}

// -----

func.func @log_softmax_dim(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{'anvil.log_softmax' op dim = 5 is out of range for rank 2}}
  %0 = anvil.log_softmax %x dim = 5 : tensor<4x8xf32>
  return
}

// -----

func.func @matmul_rank(%a: tensor<4xf32>, %b: tensor<4x4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{operands must have rank 2 or more, got lhs 'tensor<4xf32>' and rhs 'tensor<4x4xf32>'}}
  %0 = anvil.matmul %a, %b : (tensor<4xf32>, tensor<4x4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @matmul_element_types(%a: tensor<2x4xf32>, %b: tensor<4x4xbf16>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{lhs element type 'f32' differs from rhs element type 'bf16'}}
  %0 = anvil.matmul %a, %b : (tensor<2x4xf32>, tensor<4x4xbf16>) -> tensor<2x4xf32>
  return
}

// -----

func.func @matmul_contraction(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{contraction sizes differ: lhs 'tensor<2x3xf32>' has K = 3, rhs 'tensor<4x5xf32>' has K = 4}}
  %0 = anvil.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x3x4xf32>, %b: tensor<3x4x5xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{batch dimensions differ: lhs has [2], rhs has [3] (rhs must have the same batch dimensions or rank 2)}}
  %0 = anvil.matmul %a, %b : (tensor<2x3x4xf32>, tensor<3x4x5xf32>) -> tensor<2x3x5xf32>
  return
}

// -----

func.func @layer_norm_axis(%x: tensor<2x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{axis = 2 is out of range for rank 2}}
  %0 = anvil.layer_norm %x axis = 2 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @layer_norm_scale(%x: tensor<2x8xf32>, %g: tensor<4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{scale has shape [4], expected [8]}}
  %0 = anvil.layer_norm %x scale(%g) axis = 1 : (tensor<2x8xf32>, tensor<4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @layer_norm_bias_type(%x: tensor<2x8xf32>, %b: tensor<8xbf16>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{bias has element type 'bf16', expected 'f32' (the operand's)}}
  %0 = anvil.layer_norm %x bias(%b) axis = 1 : (tensor<2x8xf32>, tensor<8xbf16>) -> tensor<2x8xf32>
  return
}

// -----

func.func @rms_norm_scale(%x: tensor<2x8xf32>, %g: tensor<2x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{scale has shape [2, 8], expected [8]}}
  %0 = anvil.rms_norm %x scale(%g) axis = 1 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @group_norm_groups(%x: tensor<2x6x4x4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{groups = 4 must be positive and divide the 6 channels}}
  %0 = anvil.group_norm %x groups = 4 : (tensor<2x6x4x4xf32>) -> tensor<2x6x4x4xf32>
  return
}

// -----

func.func @group_norm_scale(%x: tensor<2x6x4x4xf32>, %g: tensor<4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{scale has shape [4], expected [6]}}
  %0 = anvil.group_norm %x scale(%g) groups = 2 : (tensor<2x6x4x4xf32>, tensor<4xf32>) -> tensor<2x6x4x4xf32>
  return
}

// -----

func.func @instance_norm_rank(%x: tensor<2x6xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{operand 'tensor<2x6xf32>' must have rank 3 or more: (N, C, spatial...)}}
  %0 = anvil.instance_norm %x : (tensor<2x6xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @batch_norm_rank(%x: tensor<6xf32>, %c: tensor<6xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{operand 'tensor<6xf32>' must have rank 2 or more: (N, C)}}
  %0:3 = anvil.batch_norm_train %x, %c, %c : (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>)
  return
}

// -----

func.func @batch_norm_variance(%x: tensor<2x6x4x4xf32>, %c: tensor<6xf32>, %v: tensor<5xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{variance has shape [5], expected [6]}}
  %0 = anvil.batch_norm_inference %x, %c, %c, %c, %v : (tensor<2x6x4x4xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<5xf32>) -> tensor<2x6x4x4xf32>
  return
}

// -----

func.func @embedding_table(%t: tensor<100xf32>, %i: tensor<4xi32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{table 'tensor<100xf32>' must have rank 2: (vocabulary, width)}}
  %0 = anvil.embedding %t[%i] : (tensor<100xf32>, tensor<4xi32>) -> tensor<4xf32>
  return
}

// -----

func.func @embedding_grad_shape(%g: tensor<4x3xf32>, %i: tensor<5xi32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{grad 'tensor<4x3xf32>' must have the indices' shape [5] plus a row width}}
  %0 = anvil.embedding_grad %g[%i] rows = 10 : (tensor<4x3xf32>, tensor<5xi32>) -> tensor<10x3xf32>
  return
}

// -----

func.func @embedding_bag_indices(%t: tensor<100x8xf32>, %i: tensor<4xi32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{indices 'tensor<4xi32>' must have rank 2: (bags, bag size)}}
  %0 = anvil.embedding_bag sum %t[%i] : (tensor<100x8xf32>, tensor<4xi32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @embedding_bag_table(%t: tensor<100xf32>, %i: tensor<4x2xi32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{table 'tensor<100xf32>' must have rank 2: (vocabulary, width)}}
  %0 = anvil.embedding_bag mean %t[%i] : (tensor<100xf32>, tensor<4x2xi32>) -> tensor<4xf32>
  return
}

// -----

func.func @rope_rank(%x: tensor<8xf32>, %c: tensor<8x4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{operand 'tensor<8xf32>' must have rank 2 or more: (..., T, D)}}
  %0 = anvil.rope %x, %c, %c : (tensor<8xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @rope_odd(%x: tensor<2x8x7xf32>, %c: tensor<8x3xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{head dimension D = 7 of the operand must be even}}
  %0 = anvil.rope %x, %c, %c : (tensor<2x8x7xf32>, tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<2x8x7xf32>
  return
}

// -----

func.func @rope_tables(%x: tensor<2x8x8xf32>, %c: tensor<8x4xf32>, %s: tensor<8x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{sin has shape [8, 8], expected [8, 4]}}
  %0 = anvil.rope %x, %c, %s : (tensor<2x8x8xf32>, tensor<8x4xf32>, tensor<8x8xf32>) -> tensor<2x8x8xf32>
  return
}

// -----

func.func @attention_rank(%q: tensor<2x4x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{query 'tensor<2x4x8xf32>' must have rank 4: (B, H, T, D)}}
  %0 = anvil.attention %q, %q, %q : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_types(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x4xbf16>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{key has element type 'bf16', query has 'f32'}}
  %0 = anvil.attention %q, %k, %k : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16>) -> tensor<1x2x8x4xf32>
  return
}

// -----

func.func @attention_batch(%q: tensor<1x2x8x4xf32>, %k: tensor<2x2x8x4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{batch sizes differ: query 1, key 2, value 2}}
  %0 = anvil.attention %q, %k, %k : (tensor<1x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return
}

// -----

func.func @attention_head_dim(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x8x6xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{key head dimension 6 differs from the query's 4}}
  %0 = anvil.attention %q, %k, %k : (tensor<1x2x8x4xf32>, tensor<1x2x8x6xf32>, tensor<1x2x8x6xf32>) -> tensor<1x2x8x6xf32>
  return
}

// -----

func.func @attention_value(%q: tensor<1x2x8x4xf32>, %v: tensor<1x2x7x4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{value 'tensor<1x2x7x4xf32>' must have the key's heads and length (2, 8)}}
  %0 = anvil.attention %q, %q, %v : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x7x4xf32>) -> tensor<1x2x8x4xf32>
  return
}

// -----

func.func @attention_gqa(%q: tensor<1x4x8x4xf32>, %k: tensor<1x3x8x4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{query heads 4 must be a multiple of key/value heads 3}}
  %0 = anvil.attention %q, %k, %k : (tensor<1x4x8x4xf32>, tensor<1x3x8x4xf32>, tensor<1x3x8x4xf32>) -> tensor<1x4x8x4xf32>
  return
}

// -----

func.func @attention_mask(%q: tensor<1x2x8x4xf32>, %m: tensor<8x7xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{mask 'tensor<8x7xf32>' must be (8, 8) or (1|1, 2|1, 8, 8) of element type 'f32'}}
  %0 = anvil.attention %q, %q, %q mask(%m) : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<8x7xf32>) -> tensor<1x2x8x4xf32>
  return
}

// -----

func.func @attention_causal_short_keys(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x4x4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{causal attention needs at least as many keys as queries (4 keys, 8 queries)}}
  %0 = anvil.attention %q, %k, %k {causal} : (tensor<1x2x8x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x8x4xf32>
  return
}

// -----

func.func @attention_scale(%q: tensor<1x2x8x4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{scale = -0.5 must be finite and positive}}
  %0 = anvil.attention %q, %q, %q {scale = -0.5 : f64} : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  return
}

// -----

func.func @conv_rank(%x: tensor<2x4xf32>, %w: tensor<8x4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{input 'tensor<2x4xf32>' must have rank 3, 4 or 5: (N, C, spatial...)}}
  %0 = anvil.conv %x, %w stride [] pad_low [] pad_high [] dilation [] : (tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @conv_filter_rank(%x: tensor<2x4x8xf32>, %w: tensor<8x4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{filter 'tensor<8x4xf32>' must have the input's rank 3}}
  %0 = anvil.conv %x, %w stride [1] pad_low [0] pad_high [0] dilation [1] : (tensor<2x4x8xf32>, tensor<8x4xf32>) -> tensor<2x8x8xf32>
  return
}

// -----

func.func @conv_filter_type(%x: tensor<2x4x8xf32>, %w: tensor<8x4x3xf16>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{filter element type 'f16' differs from the input's 'f32'}}
  %0 = anvil.conv %x, %w stride [1] pad_low [0] pad_high [0] dilation [1] : (tensor<2x4x8xf32>, tensor<8x4x3xf16>) -> tensor<2x8x6xf32>
  return
}

// -----

func.func @conv_arrays(%x: tensor<2x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{stride has 1 entries, expected 2 (one per spatial dimension)}}
  %0 = anvil.conv %x, %w stride [1] pad_low [0, 0] pad_high [0, 0] dilation [1, 1] : (tensor<2x4x8x8xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x6x6xf32>
  return
}

// -----

func.func @conv_stride(%x: tensor<2x4x8xf32>, %w: tensor<8x4x3xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{stride and dilation must be at least 1, got stride [0] and dilation [1]}}
  %0 = anvil.conv %x, %w stride [0] pad_low [0] pad_high [0] dilation [1] : (tensor<2x4x8xf32>, tensor<8x4x3xf32>) -> tensor<2x8x6xf32>
  return
}

// -----

func.func @conv_padding(%x: tensor<2x4x8xf32>, %w: tensor<8x4x3xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{padding must not be negative, got pad_low [-1] and pad_high [0]}}
  %0 = anvil.conv %x, %w stride [1] pad_low [-1] pad_high [0] dilation [1] : (tensor<2x4x8xf32>, tensor<8x4x3xf32>) -> tensor<2x8x5xf32>
  return
}

// -----

func.func @conv_groups(%x: tensor<2x4x8xf32>, %w: tensor<8x4x3xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{groups = 3 must be positive and divide the 4 input channels}}
  %0 = anvil.conv %x, %w stride [1] pad_low [0] pad_high [0] dilation [1] {groups = 3 : i64} : (tensor<2x4x8xf32>, tensor<8x4x3xf32>) -> tensor<2x8x6xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<2x4x8xf32>, %w: tensor<8x3x3xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{filter 'tensor<8x3x3xf32>' has 3 input channels per group, but the input has 4 channels in 1 group(s)}}
  %0 = anvil.conv %x, %w stride [1] pad_low [0] pad_high [0] dilation [1] : (tensor<2x4x8xf32>, tensor<8x3x3xf32>) -> tensor<2x8x6xf32>
  return
}

// -----

func.func @conv_output_groups(%x: tensor<2x4x8xf32>, %w: tensor<7x2x3xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{groups = 2 must divide the 7 output channels}}
  %0 = anvil.conv %x, %w stride [1] pad_low [0] pad_high [0] dilation [1] {groups = 2 : i64} : (tensor<2x4x8xf32>, tensor<7x2x3xf32>) -> tensor<2x7x6xf32>
  return
}

// -----

func.func @conv_bias(%x: tensor<2x4x8xf32>, %w: tensor<8x4x3xf32>, %b: tensor<4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{bias has shape [4], expected [8]}}
  %0 = anvil.conv %x, %w, %b stride [1] pad_low [0] pad_high [0] dilation [1] : (tensor<2x4x8xf32>, tensor<8x4x3xf32>, tensor<4xf32>) -> tensor<2x8x6xf32>
  return
}

// -----

func.func @conv_fit(%x: tensor<2x4x3xf32>, %w: tensor<8x4x3xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{the dilated filter (3 taps) does not fit spatial dimension 0 of the padded input (3)}}
  %0 = anvil.conv %x, %w stride [1] pad_low [0] pad_high [0] dilation [2] : (tensor<2x4x3xf32>, tensor<8x4x3xf32>) -> tensor<2x8x1xf32>
  return
}

// -----

func.func @conv_empty_kernel(%x: tensor<1x1x4xf32>, %w: tensor<1x1x0xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{spatial dimension 0 is empty in the input 'tensor<1x1x4xf32>' or the filter 'tensor<1x1x0xf32>'}}
  %0 = anvil.conv %x, %w stride [1] pad_low [0] pad_high [0] dilation [1] : (tensor<1x1x4xf32>, tensor<1x1x0xf32>) -> tensor<1x1x5xf32>
  return
}

// -----

func.func @conv_huge_padding(%x: tensor<1x1x4xf32>, %w: tensor<1x1x1xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{spatial dimension 0 overflows: the padding or dilation is too large}}
  %0 = anvil.conv %x, %w stride [1] pad_low [9223372036854775807] pad_high [1] dilation [1] : (tensor<1x1x4xf32>, tensor<1x1x1xf32>) -> tensor<1x1x5xf32>
  return
}

// -----

func.func @conv_transpose_huge_stride(%x: tensor<1x4x8xf32>, %w: tensor<4x2x2xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{spatial dimension 0 of the result is too large}}
  %0 = anvil.conv_transpose %x, %w stride [4611686018427387904] pad_low [0] pad_high [0] dilation [1] output_padding [0] : (tensor<1x4x8xf32>, tensor<4x2x2xf32>) -> tensor<1x2x16xf32>
  return
}

// -----

func.func @conv_transpose_filter(%x: tensor<1x4x8xf32>, %w: tensor<2x2x2xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{filter 'tensor<2x2x2xf32>' must have 4 rows (the input channels): (Cin, Cout/groups, k...)}}
  %0 = anvil.conv_transpose %x, %w stride [2] pad_low [0] pad_high [0] dilation [1] output_padding [0] : (tensor<1x4x8xf32>, tensor<2x2x2xf32>) -> tensor<1x2x16xf32>
  return
}

// -----

func.func @conv_transpose_output_padding(%x: tensor<1x4x8xf32>, %w: tensor<4x2x2xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{output_padding [2] must be non-negative and smaller than the stride or the dilation}}
  %0 = anvil.conv_transpose %x, %w stride [2] pad_low [0] pad_high [0] dilation [1] output_padding [2] : (tensor<1x4x8xf32>, tensor<4x2x2xf32>) -> tensor<1x2x18xf32>
  return
}

// -----

func.func @conv_transpose_output_padding_count(%x: tensor<1x4x8xf32>, %w: tensor<4x2x2xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{output_padding has 2 entries, expected 1 (one per spatial dimension)}}
  %0 = anvil.conv_transpose %x, %w stride [2] pad_low [0] pad_high [0] dilation [1] output_padding [0, 0] : (tensor<1x4x8xf32>, tensor<4x2x2xf32>) -> tensor<1x2x16xf32>
  return
}

// -----

func.func @conv_transpose_empty(%x: tensor<1x4x1xf32>, %w: tensor<4x2x1xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{spatial dimension 0 of the result would be empty (-1): the padding is larger than the output}}
  %0 = anvil.conv_transpose %x, %w stride [1] pad_low [1] pad_high [1] dilation [1] output_padding [0] : (tensor<1x4x1xf32>, tensor<4x2x1xf32>) -> tensor<1x2x1xf32>
  return
}

// -----

func.func @conv_filter_grad_groups(%x: tensor<1x4x8xf32>, %g: tensor<1x3x6xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{groups = 2 must divide the 4 input and 3 output channels}}
  %0 = anvil.conv_filter_grad %x, %g kernel [3] stride [1] pad_low [0] pad_high [0] dilation [1] {groups = 2 : i64} : (tensor<1x4x8xf32>, tensor<1x3x6xf32>) -> tensor<3x2x3xf32>
  return
}

// -----

func.func @max_pool_grad_shape(%x: tensor<1x1x4xf32>, %g: tensor<1x1x3xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{grad has type 'tensor<1x1x3xf32>', the pooling of the operand gives 'tensor<1x1x2xf32>'}}
  %0 = anvil.max_pool_grad %x, %g window [2] stride [2] pad_low [0] pad_high [0] : (tensor<1x1x4xf32>, tensor<1x1x3xf32>) -> tensor<1x1x4xf32>
  return
}

// -----

func.func @pool_rank(%x: tensor<2x4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{operand 'tensor<2x4xf32>' must have rank 3 or more: (N, C, spatial...)}}
  %0 = anvil.max_pool %x window [] stride [] pad_low [] pad_high [] : tensor<2x4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @pool_arrays(%x: tensor<2x4x8x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{window has 1 entries, expected 2 (one per spatial dimension)}}
  %0 = anvil.max_pool %x window [2] stride [2, 2] pad_low [0, 0] pad_high [0, 0] : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xf32>
  return
}

// -----

func.func @pool_window(%x: tensor<2x4x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{window [0] and stride [1] must be at least 1}}
  %0 = anvil.avg_pool %x window [0] stride [1] pad_low [0] pad_high [0] : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  return
}

// -----

func.func @pool_padding(%x: tensor<2x4x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{padding (pad_low [2], pad_high [0]) must be non-negative and smaller than the window [2]}}
  %0 = anvil.max_pool %x window [2] stride [1] pad_low [2] pad_high [0] : tensor<2x4x8xf32> -> tensor<2x4x9xf32>
  return
}

// -----

func.func @pool_empty(%x: tensor<2x4x0xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{spatial dimension 0 of the operand 'tensor<2x4x0xf32>' is empty}}
  %0 = anvil.max_pool %x window [1] stride [1] pad_low [0] pad_high [0] : tensor<2x4x0xf32> -> tensor<2x4x0xf32>
  return
}

// -----

func.func @pool_fit(%x: tensor<2x4x2xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{window 3 does not fit spatial dimension 0 of the padded operand (2)}}
  %0 = anvil.max_pool %x window [3] stride [1] pad_low [0] pad_high [0] : tensor<2x4x2xf32> -> tensor<2x4x1xf32>
  return
}

// -----

func.func @upsample_rank(%x: tensor<2x4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{operand 'tensor<2x4xf32>' must have rank 3 or more: (N, C, spatial...)}}
  %0 = anvil.upsample_nearest %x scale [] : tensor<2x4xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @upsample_count(%x: tensor<2x4x8x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{scale has 1 entries, expected 2 (one per spatial dimension)}}
  %0 = anvil.upsample_nearest %x scale [2] : tensor<2x4x8x8xf32> -> tensor<2x4x16x16xf32>
  return
}

// -----

func.func @upsample_overflow(%x: tensor<2x4x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{scale [4611686018427387904] makes the result too large}}
  %0 = anvil.upsample_nearest %x scale [4611686018427387904] : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  return
}

// -----

func.func @upsample_scale(%x: tensor<2x4x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{scale [0] must be at least 1}}
  %0 = anvil.upsample_nearest %x scale [0] : tensor<2x4x8xf32> -> tensor<2x4x0xf32>
  return
}

// -----

func.func @cross_entropy_rank(%l: tensor<f32>, %y: tensor<i32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{logits must have a class dimension: (..., C)}}
  %0 = anvil.cross_entropy mean %l, %y : (tensor<f32>, tensor<i32>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_labels(%l: tensor<4x10xf32>, %y: tensor<5xi32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{labels have shape [5], expected the logits' shape without the class dimension, [4]}}
  %0 = anvil.cross_entropy mean %l, %y : (tensor<4x10xf32>, tensor<5xi32>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_smoothing(%l: tensor<4x10xf32>, %y: tensor<4xi32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{label_smoothing = 1.5 must lie in [0, 1]}}
  %0 = anvil.cross_entropy mean %l, %y {label_smoothing = 1.5 : f64} : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_none(%l: tensor<4x10xf32>, %y: tensor<4xi32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{inferred type(s) 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<f32>'}}
  %0 = anvil.cross_entropy none %l, %y : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
  return
}

// -----

func.func @mse_types(%a: tensor<4xf32>, %b: tensor<5xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{input 'tensor<4xf32>' and target 'tensor<5xf32>' must have one type}}
  %0 = anvil.mse_loss mean %a, %b : (tensor<4xf32>, tensor<5xf32>) -> tensor<f32>
  return
}

// -----

func.func @dice_rank(%a: tensor<4x3xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{input 'tensor<4x3xf32>' must have rank 3 or more}}
  %0 = anvil.dice_loss mean %a, %a : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<f32>
  return
}

// -----

func.func @focal_alpha(%a: tensor<4xf32>) {
  // expected-error@+1 {{alpha = 1.5 must be at most 1 (or negative to disable the weighting)}}
  %0 = anvil.focal_loss sum %a, %a {alpha = 1.5 : f64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func @focal_alpha_nan(%a: tensor<4xf32>) {
  // expected-error@+1 {{alpha = nan must be at most 1}}
  %0 = anvil.focal_loss sum %a, %a {alpha = 0x7FF8000000000000 : f64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func @focal_gamma(%a: tensor<4xf32>) {
  // expected-error@+1 {{attribute 'gamma' failed to satisfy constraint: 64-bit float attribute whose value is non-negative}}
  %0 = anvil.focal_loss sum %a, %a {gamma = -1.0 : f64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func @norm_epsilon(%x: tensor<2x8xf32>) {
  // expected-error@+1 {{attribute 'epsilon' failed to satisfy constraint: 64-bit float attribute whose value is non-negative}}
  %0 = anvil.layer_norm %x axis = 1 {epsilon = -1.0e-5 : f64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @dice_smooth(%a: tensor<1x2x4xf32>) {
  // expected-error@+1 {{attribute 'smooth' failed to satisfy constraint: 64-bit float attribute whose value is non-negative}}
  %0 = anvil.dice_loss mean %a, %a {smooth = -1.0 : f64} : (tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> tensor<f32>
  return
}

// -----

func.func @unknown_reduction(%a: tensor<4xf32>) {
  // expected-error@+1 {{expected string or keyword containing one of the following enum values for attribute 'reduction' [mean, sum, none]}}
  %0 = anvil.mse_loss average %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func @unknown_op(%a: tensor<4xf32>) {
  // expected-error@+1 {{custom op 'anvil.frobnicate' is unknown}}
  %0 = anvil.frobnicate %a : tensor<4xf32>
  return
}

// -----

func.func @unknown_discardable_attr(%a: tensor<4xf32>) {
  // expected-error@+1 {{unknown anvil attribute 'anvil.fused' on an op}}
  %0 = anvil.exp %a {anvil.fused} : tensor<4xf32>
  return
}

// -----

// expected-error@+1 {{result #0 has unknown attribute 'anvil.bogus'; anvil defines 'anvil.grad', 'anvil.metric' and 'anvil.tied_to'}}
func.func private @result_attribute(tensor<4xf32>) -> (tensor<4xf32> {anvil.bogus = 1 : i32})

// -----

func.func @all_reduce_without_axis(%g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'anvil.all_reduce' op needs the name of a mesh axis (axis "dp")}}
  %0 = anvil.all_reduce sum %g axis "" : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

module attributes {anvil.mesh = {dp = 2 : i64}} {
func.func @axis_not_in_mesh(%g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'anvil.all_reduce' op axis 'tp' is not an axis of the module's anvil.mesh {dp = 2 : i64}}}
  %0 = anvil.all_reduce sum %g axis "tp" : tensor<4xf32>
  return %0 : tensor<4xf32>
}
}

// -----

module attributes {anvil.mesh = {dp = 2 : i64}} {
func.func @gather_blocks(%g: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error@+1 {{'anvil.all_gather' op the result ('tensor<4x3xf32>') must be the 2 blocks of axis 'dp' along dimension 0, each the operand ('tensor<4x3xf32>')}}
  %0 = anvil.all_gather %g axis "dp" : tensor<4x3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}
}

// -----

module attributes {anvil.mesh = {dp = 2 : i64}} {
func.func @scatter_blocks(%g: tensor<5xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'anvil.reduce_scatter' op the operand ('tensor<5xf32>') must be the 2 blocks of axis 'dp' along dimension 0, each the result ('tensor<2xf32>')}}
  %0 = anvil.reduce_scatter sum %g axis "dp" : tensor<5xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
}

// -----

// Without a mesh every axis has one rank: a slice is the whole operand.
func.func @slice_without_mesh(%g: tensor<4xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'anvil.axis_slice' op the operand ('tensor<4xf32>') must be the 1 blocks of axis 'dp' along dimension 0, each the result ('tensor<2xf32>')}}
  %0 = anvil.axis_slice %g axis "dp" : tensor<4xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// expected-error@+1 {{'anvil.mesh': axis 'dp' needs a positive number of ranks, got 0 : i64}}
module attributes {anvil.mesh = {dp = 0 : i64}} {
}

// -----

func.func @fp8_no_format(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'anvil.fp8_quantize' op needs a forward format, a backward format or both}}
  %0 = anvil.fp8_quantize %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @fp8_not_eight_bit(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'anvil.fp8_quantize' op formats must be f8E4M3FN or f8E5M2}}
  %0 = anvil.fp8_quantize %x forward bf16 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @fp8_attribute_on_add(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'anvil.fp8' must be a recipe name on an anvil.matmul}}
  %0 = anvil.add %x, %x {anvil.fp8 = "current"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @fp8_block_dim_out_of_range(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  // expected-error@+1 {{'anvil.fp8_quantize' op block dim 2 is not a dimension of 'tensor<4x64xf32>'}}
  %0 = anvil.fp8_quantize %x forward f8E4M3FN block 32 dim 2 : tensor<4x64xf32>
  return %0 : tensor<4x64xf32>
}

// -----

func.func @fp8_blocks_do_not_divide(%x: tensor<4x48xf32>) -> tensor<4x48xf32> {
  // expected-error@+1 {{'anvil.fp8_quantize' op blocks of 32 do not divide dimension 1 of 'tensor<4x48xf32>'}}
  %0 = anvil.fp8_quantize %x forward f8E4M3FN block 32 dim 1 : tensor<4x48xf32>
  return %0 : tensor<4x48xf32>
}

// -----

func.func @fp8_blocks_with_history(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  // expected-error@+1 {{'anvil.fp8_quantize' op block scaling takes no scale, amax_axis or history (each block's scale comes from the block)}}
  %0 = anvil.fp8_quantize %x forward f8E4M3FN block 32 dim 1 history "h.0.fc.input" : tensor<4x64xf32>
  return %0 : tensor<4x64xf32>
}

// -----

func.func @fp8_block_size_without_dim(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  // expected-error@+1 {{'anvil.fp8_quantize' op needs both block_size and block_dim, or neither}}
  %0 = anvil.fp8_quantize %x forward f8E4M3FN {block_size = 32 : i64} : tensor<4x64xf32>
  return %0 : tensor<4x64xf32>
}

// -----

func.func @fp8_scale_without_forward(%x: tensor<4xf32>, %s: tensor<f32>) -> tensor<4xf32> {
  // expected-error@+1 {{'anvil.fp8_quantize' op a given scale needs a forward format}}
  %0 = anvil.fp8_quantize %x scale %s backward f8E5M2 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-note@+1 {{prior use here}}
func.func @fp8_scale_not_scalar(%x: tensor<4xf32>, %s: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{use of value '%s' expects different type than prior uses: 'tensor<f32>' vs 'tensor<4xf32>'}}
  %0 = anvil.fp8_quantize %x scale %s forward f8E4M3FN : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

module attributes {anvil.mesh = {tp = 2 : i64}} {
  func.func @fp8_scale_and_axis(%x: tensor<4xf32>, %s: tensor<f32>) -> tensor<4xf32> {
    // expected-error@+1 {{'anvil.fp8_quantize' op a given scale takes no amax_axis}}
    %0 = anvil.fp8_quantize %x scale %s forward f8E4M3FN amax_axis "tp" : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

module attributes {anvil.mesh = {dp = 2 : i64}} {
  func.func @fp8_unknown_axis(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error@+1 {{'anvil.fp8_quantize' op amax_axis 'tp' is not an axis of the module's anvil.mesh}}
    %0 = anvil.fp8_quantize %x forward f8E4M3FN amax_axis "tp" : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

func.func @flash_attention_f16(%q: tensor<1x2x8x4xf16>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{element type 'f16' must be f32, f64 or bf16}}
  %o, %lse = anvil.flash_attention %q, %q, %q : (tensor<1x2x8x4xf16>, tensor<1x2x8x4xf16>, tensor<1x2x8x4xf16>) -> (tensor<1x2x8x4xf16>, tensor<1x2x8xf16>)
  return
}

// -----

// bf16 tensors only with bf16 products.
func.func @flash_attention_bf16_tensors(%q: tensor<1x2x8x4xbf16>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{bf16 tensors need bf16_gemms (bf16 products)}}
  %o, %lse = anvil.flash_attention %q, %q, %q : (tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16>) -> (tensor<1x2x8x4xbf16>, tensor<1x2x8xf32>)
  return
}

// -----

// With bf16 tensors the log-sum-exp is f32.
func.func @flash_attention_bf16_lse(%q: tensor<1x2x8x4xbf16>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{inferred type(s) 'tensor<1x2x8x4xbf16>', 'tensor<1x2x8xf32>' are incompatible with return type(s) of operation 'tensor<1x2x8x4xbf16>', 'tensor<1x2x8xbf16>'}}
  %o, %lse = anvil.flash_attention %q, %q, %q {bf16_gemms} : (tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16>) -> (tensor<1x2x8x4xbf16>, tensor<1x2x8xbf16>)
  return
}

// -----

func.func @flash_attention_causal(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x4x4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{causal attention needs at least as many keys as queries (4 keys, 8 queries)}}
  %o, %lse = anvil.flash_attention %q, %k, %k {causal} : (tensor<1x2x8x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> (tensor<1x2x8x4xf32>, tensor<1x2x8xf32>)
  return
}

// -----

func.func @flash_attention_bshd_rank(%q: tensor<2x8x4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{query 'tensor<2x8x4xf32>' must have rank 4: (B, T, H, D) (bshd)}}
  %o, %lse = anvil.flash_attention %q, %q, %q {bshd} : (tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> (tensor<2x8x4xf32>, tensor<2x8xf32>)
  return
}

// -----

// (B, T, H, D): 8 queries, 3 query heads; the key has 2 heads (3 is no
// multiple of 2).
func.func @flash_attention_bshd_heads(%q: tensor<1x8x3x4xf32>, %k: tensor<1x8x2x4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{query heads 3 must be a multiple of key/value heads 2 (bshd operands, as (B, H, T, D))}}
  %o, %lse = anvil.flash_attention %q, %k, %k {bshd} : (tensor<1x8x3x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>) -> (tensor<1x8x3x4xf32>, tensor<1x3x8xf32>)
  return
}

// -----

// The gradient's result must be laid out as the forward's: (B, T, H, D).
func.func @flash_attention_grad_bshd_result(%q: tensor<1x8x2x4xf32>, %o: tensor<1x2x8x4xf32>, %lse: tensor<1x2x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{result 'tensor<1x2x8x4xf32>' must be 'tensor<1x8x2x4xf32>'}}
  %dq, %dk, %dv = anvil.flash_attention_grad %q, %q, %q, %o, %lse, %o {bshd} : (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8xf32>, tensor<1x2x8x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>)
  return
}

// -----

func.func @flash_attention_grad_packed_bhsd(%q: tensor<1x2x8x4xf32>, %lse: tensor<1x2x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{packed_grads needs bshd: the gradients side by side in each (B, T) row}}
  %dqkv = anvil.flash_attention_grad %q, %q, %q, %q, %lse, %q {packed_grads} : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x8x24xf32>
  return
}

// -----

func.func @flash_attention_grad_packed_cross(%q: tensor<1x8x2x4xf32>, %k: tensor<1x5x2x4xf32>, %lse: tensor<1x2x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{packed_grads needs as many keys as queries (5 keys, 8 queries)}}
  %dqkv = anvil.flash_attention_grad %q, %k, %k, %q, %lse, %q {bshd, packed_grads} : (tensor<1x8x2x4xf32>, tensor<1x5x2x4xf32>, tensor<1x5x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x2x8xf32>, tensor<1x8x2x4xf32>) -> tensor<1x8x24xf32>
  return
}

// -----

func.func @flash_attention_grad_lse(%q: tensor<1x2x8x4xf32>, %lse: tensor<1x2x4xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{lse 'tensor<1x2x4xf32>' must be 'tensor<1x2x8xf32>'}}
  %dq, %dk, %dv = anvil.flash_attention_grad %q, %q, %q, %q, %lse, %q : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x4xf32>, tensor<1x2x8x4xf32>) -> (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>)
  return
}

// -----

func.func @linear_gelu_types(%x: tensor<4x8xbf16>, %w: tensor<8x16xf32>, %b: tensor<16xbf16>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{lhs and rhs must have one element type, got 'tensor<4x8xbf16>' and 'tensor<8x16xf32>'}}
  %y, %pre = anvil.linear_gelu %x, %w, %b : (tensor<4x8xbf16>, tensor<8x16xf32>, tensor<16xbf16>) -> (tensor<4x16xbf16>, tensor<4x16xbf16>)
  return
}

// -----

func.func @linear_gelu_batched_rhs(%x: tensor<2x4x8xbf16>, %w: tensor<2x8x16xbf16>, %b: tensor<16xbf16>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{rhs must be a matrix shared by every row of lhs, got 'tensor<2x8x16xbf16>'}}
  %y, %pre = anvil.linear_gelu %x, %w, %b : (tensor<2x4x8xbf16>, tensor<2x8x16xbf16>, tensor<16xbf16>) -> (tensor<2x4x16xbf16>, tensor<2x4x16xbf16>)
  return
}

// -----

func.func @linear_gelu_contraction(%x: tensor<4x8xbf16>, %w: tensor<16x8xbf16>, %b: tensor<8xbf16>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{contraction sizes differ: lhs 'tensor<4x8xbf16>' has K = 8, rhs 'tensor<16x8xbf16>' has K = 16}}
  %y, %pre = anvil.linear_gelu %x, %w, %b : (tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<8xbf16>) -> (tensor<4x8xbf16>, tensor<4x8xbf16>)
  return
}

// -----

func.func @linear_gelu_bias(%x: tensor<4x8xbf16>, %w: tensor<8x16xbf16>, %b: tensor<16xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{bias must be 'tensor<16xbf16>' (one per column of the product 'tensor<4x16xbf16>'), got 'tensor<16xf32>'}}
  %y, %pre = anvil.linear_gelu %x, %w, %b : (tensor<4x8xbf16>, tensor<8x16xbf16>, tensor<16xf32>) -> (tensor<4x16xbf16>, tensor<4x16xbf16>)
  return
}

// -----

func.func @linear_bias(%x: tensor<2x4x8xbf16>, %w: tensor<12x8xbf16>, %b: tensor<8xbf16>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{bias must be 'tensor<12xbf16>' (one per column of the product 'tensor<2x4x12xbf16>'), got 'tensor<8xbf16>'}}
  %y = anvil.linear %x, %w, %b {transpose_rhs} : (tensor<2x4x8xbf16>, tensor<12x8xbf16>, tensor<8xbf16>) -> tensor<2x4x12xbf16>
  return
}

// -----

func.func @gelu_bias_grad_types(%g: tensor<4x16xbf16>, %pre: tensor<4x16xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{grad and pre must have one type, got 'tensor<4x16xbf16>' and 'tensor<4x16xf32>'}}
  %d, %db = anvil.gelu_bias_grad %g, %pre : (tensor<4x16xbf16>, tensor<4x16xf32>) -> (tensor<4x16xbf16>, tensor<16xbf16>)
  return
}

// -----

func.func @matmul_bias_grad_rows(%x: tensor<8x4xbf16>, %g: tensor<6x16xbf16>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{lhs and grad must be (M, K) and (M, N) matrices of one element type, got 'tensor<8x4xbf16>' and 'tensor<6x16xbf16>'}}
  %dw, %db = anvil.matmul_bias_grad %x, %g : (tensor<8x4xbf16>, tensor<6x16xbf16>) -> (tensor<4x16xbf16>, tensor<16xbf16>)
  return
}

// -----

func.func @matmul_gelu_bias_grad_pre(%dy: tensor<4x8xbf16>, %w: tensor<16x8xbf16>, %pre: tensor<4x8xbf16>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{pre must be the product's type 'tensor<4x16xbf16>', got 'tensor<4x8xbf16>'}}
  %d, %db = anvil.matmul_gelu_bias_grad %dy, %w, %pre {transpose_rhs} : (tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<4x8xbf16>) -> (tensor<4x16xbf16>, tensor<16xbf16>)
  return
}

// -----

func.func @broadcast_grad_elsewhere(%x: tensor<4xf32>) {
  // expected-error@+1 {{'anvil.broadcast_grad' must be a unit attribute on an anvil.reduce_sum}}
  %0 = anvil.exp %x {anvil.broadcast_grad} : tensor<4xf32>
  return
}

// -----

func.func @library_call_elsewhere(%x: tensor<4xf32>) {
  // expected-error@+1 {{'anvil.library_call' must be a unit attribute on an anvil.conv, anvil.conv_transpose, anvil.conv_filter_grad or anvil.embedding_grad}}
  %0 = anvil.exp %x {anvil.library_call} : tensor<4xf32>
  return
}

// -----

func.func @matmul_f8_of_f32(%a: tensor<4x16xf32>, %b: tensor<8x16xf8E4M3FN>, %s: tensor<f32>) {
  // expected-error@+1 {{'anvil.matmul_f8' op operands must be f8E4M3FN or f8E5M2 tensors, got lhs 'tensor<4x16xf32>' and rhs 'tensor<8x16xf8E4M3FN>'}}
  %0 = anvil.matmul_f8 %a, %b scales(%s, %s) {transpose_rhs} : (tensor<4x16xf32>, tensor<8x16xf8E4M3FN>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @matmul_f8_two_e5m2(%a: tensor<4x16xf8E5M2>, %b: tensor<8x16xf8E5M2>, %s: tensor<f32>) {
  // expected-error@+1 {{'anvil.matmul_f8' op at most one operand may be f8E5M2 (as in FP8 GEMMs)}}
  %0 = anvil.matmul_f8 %a, %b scales(%s, %s) {transpose_rhs} : (tensor<4x16xf8E5M2>, tensor<8x16xf8E5M2>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @matmul_f8_f16_result(%a: tensor<4x16xf8E4M3FN>, %b: tensor<8x16xf8E4M3FN>, %s: tensor<f32>) {
  // expected-error@+1 {{'anvil.matmul_f8' op result must be an f32 or bf16 tensor, got 'tensor<4x8xf16>'}}
  %0 = anvil.matmul_f8 %a, %b scales(%s, %s) {transpose_rhs} : (tensor<4x16xf8E4M3FN>, tensor<8x16xf8E4M3FN>, tensor<f32>, tensor<f32>) -> tensor<4x8xf16>
  return
}

// -----

func.func @matmul_f8_wrong_shape(%a: tensor<4x16xf8E4M3FN>, %b: tensor<8x16xf8E4M3FN>, %s: tensor<f32>) {
  // expected-error@+1 {{'anvil.matmul_f8' op result must be 'tensor<4x8xbf16>' (the product's shape), got 'tensor<4x16xbf16>'}}
  %0 = anvil.matmul_f8 %a, %b scales(%s, %s) {transpose_rhs} : (tensor<4x16xf8E4M3FN>, tensor<8x16xf8E4M3FN>, tensor<f32>, tensor<f32>) -> tensor<4x16xbf16>
  return
}

// -----

func.func @matmul_f8_scale_not_scalar(%a: tensor<4x16xf8E4M3FN>, %b: tensor<8x16xf8E4M3FN>, %s: tensor<1xf32>) {
  // expected-error@+1 {{'anvil.matmul_f8' op operand #2 must be 0D tensor of 32-bit float values}}
  %0 = anvil.matmul_f8 %a, %b scales(%s, %s) {transpose_rhs} : (tensor<4x16xf8E4M3FN>, tensor<8x16xf8E4M3FN>, tensor<1xf32>, tensor<1xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @matmul_f8_bias_type(%a: tensor<4x16xf8E4M3FN>, %b: tensor<8x16xf8E4M3FN>, %s: tensor<f32>, %c: tensor<8xf32>) {
  // expected-error@+1 {{'anvil.matmul_f8' op bias must be 'tensor<8xbf16>' (one per column), got 'tensor<8xf32>'}}
  %0 = anvil.matmul_f8 %a, %b scales(%s, %s) bias(%c) {transpose_rhs} : (tensor<4x16xf8E4M3FN>, tensor<8x16xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<8xf32>) -> tensor<4x8xbf16>
  return
}

// -----

func.func @matmul_f8_bias_f32_result(%a: tensor<4x16xf8E4M3FN>, %b: tensor<8x16xf8E4M3FN>, %s: tensor<f32>, %c: tensor<8xf32>) {
  // expected-error@+1 {{'anvil.matmul_f8' op a bias needs a bf16 result (cuBLASLt's FP8 GEMM adds a bf16 bias to a bf16 D), got 'tensor<4x8xf32>'}}
  %0 = anvil.matmul_f8 %a, %b scales(%s, %s) bias(%c) {transpose_rhs} : (tensor<4x16xf8E4M3FN>, tensor<8x16xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @linear_gelu_f8_bf16_operands(%a: tensor<4x16xbf16>, %b: tensor<32x16xf8E4M3FN>, %s: tensor<f32>, %c: tensor<32xbf16>) {
  // expected-error@+1 {{'anvil.linear_gelu_f8' op operands must be f8E4M3FN or f8E5M2 tensors, got lhs 'tensor<4x16xbf16>' and rhs 'tensor<32x16xf8E4M3FN>'}}
  %0:3 = anvil.linear_gelu_f8 %a, %b scales(%s, %s) bias(%c) out_scale(%s) {transpose_rhs} : (tensor<4x16xbf16>, tensor<32x16xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<32xbf16>, tensor<f32>) -> (tensor<4x32xf8E4M3FN>, tensor<4x32xbf16>, tensor<f32>)
  return
}

// -----

func.func @linear_gelu_f8_batched_weight(%a: tensor<2x4x16xf8E4M3FN>, %b: tensor<2x32x16xf8E4M3FN>, %s: tensor<f32>, %c: tensor<32xbf16>) {
  // expected-error@+1 {{'anvil.linear_gelu_f8' op rhs must be a matrix shared by every row of lhs, got 'tensor<2x32x16xf8E4M3FN>'}}
  %0:3 = anvil.linear_gelu_f8 %a, %b scales(%s, %s) bias(%c) out_scale(%s) {transpose_rhs} : (tensor<2x4x16xf8E4M3FN>, tensor<2x32x16xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<32xbf16>, tensor<f32>) -> (tensor<2x4x32xf8E4M3FN>, tensor<2x4x32xbf16>, tensor<f32>)
  return
}

// -----

func.func @linear_gelu_f8_bf16_result(%a: tensor<4x16xf8E4M3FN>, %b: tensor<32x16xf8E4M3FN>, %s: tensor<f32>, %c: tensor<32xbf16>) {
  // expected-error@+1 {{'anvil.linear_gelu_f8' op result must be an f8E4M3FN or f8E5M2 tensor (the GELU's codes), got 'tensor<4x32xbf16>'}}
  %0:3 = anvil.linear_gelu_f8 %a, %b scales(%s, %s) bias(%c) out_scale(%s) {transpose_rhs} : (tensor<4x16xf8E4M3FN>, tensor<32x16xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<32xbf16>, tensor<f32>) -> (tensor<4x32xbf16>, tensor<4x32xbf16>, tensor<f32>)
  return
}

// -----

func.func @linear_gelu_f8_pre_type(%a: tensor<4x16xf8E4M3FN>, %b: tensor<32x16xf8E4M3FN>, %s: tensor<f32>, %c: tensor<32xbf16>) {
  // expected-error@+1 {{'anvil.linear_gelu_f8' op pre must be 'tensor<4x32xbf16>' (the product's shape, bf16), got 'tensor<4x32xf32>'}}
  %0:3 = anvil.linear_gelu_f8 %a, %b scales(%s, %s) bias(%c) out_scale(%s) {transpose_rhs} : (tensor<4x16xf8E4M3FN>, tensor<32x16xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<32xbf16>, tensor<f32>) -> (tensor<4x32xf8E4M3FN>, tensor<4x32xf32>, tensor<f32>)
  return
}

// -----

func.func @linear_gelu_f8_bias_type(%a: tensor<4x16xf8E4M3FN>, %b: tensor<32x16xf8E4M3FN>, %s: tensor<f32>, %c: tensor<32xf32>) {
  // expected-error@+1 {{'anvil.linear_gelu_f8' op bias must be 'tensor<32xbf16>' (one bf16 value per column), got 'tensor<32xf32>'}}
  %0:3 = anvil.linear_gelu_f8 %a, %b scales(%s, %s) bias(%c) out_scale(%s) {transpose_rhs} : (tensor<4x16xf8E4M3FN>, tensor<32x16xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<32xf32>, tensor<f32>) -> (tensor<4x32xf8E4M3FN>, tensor<4x32xbf16>, tensor<f32>)
  return
}

// -----

func.func @linear_gelu_f8_wrong_shape(%a: tensor<4x16xf8E4M3FN>, %b: tensor<32x16xf8E4M3FN>, %s: tensor<f32>, %c: tensor<32xbf16>) {
  // expected-error@+1 {{'anvil.linear_gelu_f8' op result must be 'tensor<4x32xf8E4M3FN>' (the product's shape), got 'tensor<4x16xf8E4M3FN>'}}
  %0:3 = anvil.linear_gelu_f8 %a, %b scales(%s, %s) bias(%c) out_scale(%s) {transpose_rhs} : (tensor<4x16xf8E4M3FN>, tensor<32x16xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<32xbf16>, tensor<f32>) -> (tensor<4x16xf8E4M3FN>, tensor<4x16xbf16>, tensor<f32>)
  return
}

// -----

// A key bias is (batch, keys).
func.func @flash_attention_key_bias_shape(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x6x16xf32>, %b: tensor<2x8xf32>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{key_bias 'tensor<2x8xf32>' must be 'tensor<2x6xf32>': (batch, keys)}}
  %o, %lse = anvil.flash_attention %q, %k, %k key_bias(%b) : (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x16xf32>, tensor<2x8xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8xf32>)
  return
}

// -----

// With bf16 tensors the key bias is f32, as the log-sum-exp.
func.func @flash_attention_key_bias_bf16(%q: tensor<1x2x8x4xbf16>, %b: tensor<1x8xbf16>) {
  // expected-error@+2 {{failed to infer returned types}}
  // expected-error@+1 {{key_bias 'tensor<1x8xbf16>' must be 'tensor<1x8xf32>': (batch, keys)}}
  %o, %lse = anvil.flash_attention %q, %q, %q key_bias(%b) {bf16_gemms} : (tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16>, tensor<1x2x8x4xbf16>, tensor<1x8xbf16>) -> (tensor<1x2x8x4xbf16>, tensor<1x2x8xf32>)
  return
}
