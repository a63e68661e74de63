// RUN: anvil-opt %anvil_src_root/examples/gpt-tiny.mlir --canonicalize --cse --anvil-cost-report 2>&1 >/dev/null | FileCheck %s

// Tests that the example of the README's main job verifies, canonicalizes
// and has the parameter count of its shapes:
//   wte 64*32 + wpe 16*32 + 3 norms 3*64 + c_attn 32*96+96 + c_proj 32*32+32
//   + c_fc 32*128+128 + mlp c_proj 128*32+32 = 15328.
// CHECK: anvil-cost-report: @forward: 33 ops, {{[0-9]+}} FLOPs, {{[0-9]+}} bytes, 15328 parameters (16 tensors)
