// RUN: anvil-opt %s --anvil-cost-report -o /dev/null 2>&1 | FileCheck %s
// RUN: anvil-opt %s --anvil-cost-report=json -o /dev/null 2>&1 | FileCheck %s --check-prefix=JSON
// RUN: anvil-opt %s --anvil-cost-report=per-op -o /dev/null 2>&1 | FileCheck %s --check-prefix=PEROP
// RUN: anvil-opt %s --anvil-cost-report | FileCheck %s --check-prefix=IR

// Tests that the report sums the ops' costs and counts parameters.
// matmul (2x3)x(3x4): 2*2*4*3 = 48 FLOPs, (6 + 12 + 8) * 4 = 104 bytes.
// add (2x4): 8 FLOPs, 3 * 8 * 4 = 96 bytes.
// CHECK: anvil-cost-report: @linear: 2 ops, 56 FLOPs, 200 bytes, 12 parameters (1 tensors)
// CHECK: anvil-cost-report: @empty: 0 ops, 0 FLOPs, 0 bytes, 0 parameters (0 tensors)
// JSON: [{"bytes":200,"flops":56,"function":"linear","ops":2,"parameter_tensors":1,"parameters":12},{"bytes":0,"flops":0,"function":"empty","ops":0,"parameter_tensors":0,"parameters":0}]
// PEROP: anvil.matmul at {{.+}}cost-report.mlir":[[@LINE+9]]{{.+}}: 48 FLOPs, 104 bytes
// PEROP: anvil.add at {{.+}}: 8 FLOPs, 96 bytes
// Tests that the IR passes through unchanged.
// IR-LABEL: func.func @linear
// IR: anvil.matmul
// IR: anvil.add
func.func @linear(%x: tensor<2x3xf32> {anvil.input = #anvil.input<name = "x">},
                  %w: tensor<3x4xf32> {anvil.param = #anvil.param<name = "w", init = #anvil.init<zeros>>},
                  %b: tensor<2x4xf32> {anvil.input = #anvil.input<name = "b">}) -> tensor<2x4xf32> {
  %y = anvil.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %z = anvil.add %y, %b : tensor<2x4xf32>
  return %z : tensor<2x4xf32>
}

func.func @empty() {
  return
}
