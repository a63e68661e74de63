// A one-block GPT written by hand in the anvil dialect: the forward graph a
// frontend produces, with parameter and input metadata.
//
//   B = 2 sequences, T = 16 tokens, C = 32 channels, 2 heads of D = 16,
//   vocabulary V = 64, MLP width 4C = 128, tied input/output embedding.
//
// `scripts/run-main.sh` verifies, canonicalizes and costs it with:
//   anvil-opt examples/gpt-tiny.mlir --canonicalize --cse --anvil-cost-report

func.func @forward(
    %tokens: tensor<2x16xi32> {anvil.input = #anvil.input<name = "tokens">},
    %targets: tensor<2x16xi32> {anvil.input = #anvil.input<name = "targets">},
    %wte: tensor<64x32xf32> {anvil.param = #anvil.param<name = "wte.weight", init = #anvil.init<normal(std = 0.02)>>},
    %wpe: tensor<16x32xf32> {anvil.param = #anvil.param<name = "wpe.weight", init = #anvil.init<normal(std = 0.01)>>},
    %ln1_w: tensor<32xf32> {anvil.param = #anvil.param<name = "h.0.ln_1.weight", init = #anvil.init<ones>>},
    %ln1_b: tensor<32xf32> {anvil.param = #anvil.param<name = "h.0.ln_1.bias", init = #anvil.init<zeros>>},
    %attn_w: tensor<32x96xf32> {anvil.param = #anvil.param<name = "h.0.attn.c_attn.weight", init = #anvil.init<normal(std = 0.02)>>},
    %attn_b: tensor<96xf32> {anvil.param = #anvil.param<name = "h.0.attn.c_attn.bias", init = #anvil.init<zeros>>},
    %proj_w: tensor<32x32xf32> {anvil.param = #anvil.param<name = "h.0.attn.c_proj.weight", init = #anvil.init<normal(std = 0.02)>>},
    %proj_b: tensor<32xf32> {anvil.param = #anvil.param<name = "h.0.attn.c_proj.bias", init = #anvil.init<zeros>>},
    %ln2_w: tensor<32xf32> {anvil.param = #anvil.param<name = "h.0.ln_2.weight", init = #anvil.init<ones>>},
    %ln2_b: tensor<32xf32> {anvil.param = #anvil.param<name = "h.0.ln_2.bias", init = #anvil.init<zeros>>},
    %fc_w: tensor<32x128xf32> {anvil.param = #anvil.param<name = "h.0.mlp.c_fc.weight", init = #anvil.init<normal(std = 0.02)>>},
    %fc_b: tensor<128xf32> {anvil.param = #anvil.param<name = "h.0.mlp.c_fc.bias", init = #anvil.init<zeros>>},
    %mp_w: tensor<128x32xf32> {anvil.param = #anvil.param<name = "h.0.mlp.c_proj.weight", init = #anvil.init<normal(std = 0.02)>>},
    %mp_b: tensor<32xf32> {anvil.param = #anvil.param<name = "h.0.mlp.c_proj.bias", init = #anvil.init<zeros>>},
    %lnf_w: tensor<32xf32> {anvil.param = #anvil.param<name = "ln_f.weight", init = #anvil.init<ones>>},
    %lnf_b: tensor<32xf32> {anvil.param = #anvil.param<name = "ln_f.bias", init = #anvil.init<zeros>>})
    -> tensor<f32> {
  // Token and position embeddings: (B, T, C).
  %tok = anvil.embedding %wte[%tokens] : (tensor<64x32xf32>, tensor<2x16xi32>) -> tensor<2x16x32xf32>
  %pos = anvil.broadcast %wpe, dims = [1, 2] : tensor<16x32xf32> -> tensor<2x16x32xf32>
  %x0 = anvil.add %tok, %pos : tensor<2x16x32xf32>

  // Attention: qkv (B, T, 3C) -> q, k, v (B, H, T, D) -> (B, T, C).
  %h1 = anvil.layer_norm %x0 scale(%ln1_w) bias(%ln1_b) axis = 2 : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
  %qkv0 = anvil.matmul %h1, %attn_w : (tensor<2x16x32xf32>, tensor<32x96xf32>) -> tensor<2x16x96xf32>
  %attn_bb = anvil.broadcast %attn_b, dims = [2] : tensor<96xf32> -> tensor<2x16x96xf32>
  %qkv = anvil.add %qkv0, %attn_bb : tensor<2x16x96xf32>
  %q, %k, %v = anvil.split %qkv dim = 2 sizes [32, 32, 32] : tensor<2x16x96xf32> -> tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>
  %q4 = anvil.reshape %q : tensor<2x16x32xf32> -> tensor<2x16x2x16xf32>
  %k4 = anvil.reshape %k : tensor<2x16x32xf32> -> tensor<2x16x2x16xf32>
  %v4 = anvil.reshape %v : tensor<2x16x32xf32> -> tensor<2x16x2x16xf32>
  %qh = anvil.transpose %q4, [0, 2, 1, 3] : tensor<2x16x2x16xf32> -> tensor<2x2x16x16xf32>
  %kh = anvil.transpose %k4, [0, 2, 1, 3] : tensor<2x16x2x16xf32> -> tensor<2x2x16x16xf32>
  %vh = anvil.transpose %v4, [0, 2, 1, 3] : tensor<2x16x2x16xf32> -> tensor<2x2x16x16xf32>
  %att = anvil.attention %qh, %kh, %vh {causal} : (tensor<2x2x16x16xf32>, tensor<2x2x16x16xf32>, tensor<2x2x16x16xf32>) -> tensor<2x2x16x16xf32>
  %att_t = anvil.transpose %att, [0, 2, 1, 3] : tensor<2x2x16x16xf32> -> tensor<2x16x2x16xf32>
  %att_c = anvil.reshape %att_t : tensor<2x16x2x16xf32> -> tensor<2x16x32xf32>
  %proj0 = anvil.matmul %att_c, %proj_w : (tensor<2x16x32xf32>, tensor<32x32xf32>) -> tensor<2x16x32xf32>
  %proj_bb = anvil.broadcast %proj_b, dims = [2] : tensor<32xf32> -> tensor<2x16x32xf32>
  %proj = anvil.add %proj0, %proj_bb : tensor<2x16x32xf32>
  %x1 = anvil.add %x0, %proj : tensor<2x16x32xf32>

  // MLP: (B, T, C) -> (B, T, 4C) -> GELU -> (B, T, C).
  %h2 = anvil.layer_norm %x1 scale(%ln2_w) bias(%ln2_b) axis = 2 : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
  %fc0 = anvil.matmul %h2, %fc_w : (tensor<2x16x32xf32>, tensor<32x128xf32>) -> tensor<2x16x128xf32>
  %fc_bb = anvil.broadcast %fc_b, dims = [2] : tensor<128xf32> -> tensor<2x16x128xf32>
  %fc = anvil.add %fc0, %fc_bb : tensor<2x16x128xf32>
  %act = anvil.gelu tanh %fc : tensor<2x16x128xf32>
  %mp0 = anvil.matmul %act, %mp_w : (tensor<2x16x128xf32>, tensor<128x32xf32>) -> tensor<2x16x32xf32>
  %mp_bb = anvil.broadcast %mp_b, dims = [2] : tensor<32xf32> -> tensor<2x16x32xf32>
  %mp = anvil.add %mp0, %mp_bb : tensor<2x16x32xf32>
  %x2 = anvil.add %x1, %mp : tensor<2x16x32xf32>

  // Final norm, tied output projection (B, T, V), mean cross-entropy.
  %hf = anvil.layer_norm %x2 scale(%lnf_w) bias(%lnf_b) axis = 2 : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
  %logits = anvil.matmul %hf, %wte {transpose_rhs} : (tensor<2x16x32xf32>, tensor<64x32xf32>) -> tensor<2x16x64xf32>
  %loss = anvil.cross_entropy mean %logits, %targets : (tensor<2x16x64xf32>, tensor<2x16xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}
