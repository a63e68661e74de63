//===- ManifestTest.cpp - tests of the executable manifest ----------------===//

#include "anvil/runtime/Manifest.h"

#include <gtest/gtest.h>

using namespace anvil::rt;

namespace {
const char *kGood = R"({
  "format": "anvil.manifest", "version": 1, "model": "mlp",
  "flops_per_step": 1.5e6, "planned_bytes": 4096,
  "buffers": [
    {"name": "fc.weight", "shape": [4, 3], "dtype": "f32", "role": "param",
     "index": 0, "init": {"kind": "kaiming_uniform", "args": {"gain": 1.0},
                          "mode": "fan_out"}, "result": 1, "eval_index": 0},
    {"name": "fc.weight.adam_m", "shape": [4, 3], "dtype": "f32",
     "role": "state", "index": 1, "init": {"kind": "zeros"}, "result": 2},
    {"name": "step", "shape": [], "dtype": "i64", "role": "state",
     "index": 2, "init": {"kind": "zeros"}, "result": 3},
    {"name": "x", "shape": [8, 3], "dtype": "i32", "role": "input",
     "index": 3, "eval_index": 1, "range": 10},
    {"name": "loss", "shape": [], "dtype": "f32", "role": "loss", "index": 0}
  ],
  "train_step": {"args": 4, "results": 4},
  "eval_step": {"args": 2, "results": [{"shape": [], "dtype": "f32"}]}})";

std::string parseError(const std::string &text) {
  Expected<Manifest> m = Manifest::parse(text);
  EXPECT_FALSE(m) << text;
  return m ? "" : m.status().message();
}

/// kGood with `from` replaced by `to`.
std::string edit(const std::string &from, const std::string &to) {
  std::string s = kGood;
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}
} // namespace

TEST(Manifest, ParsesAllFields) {
  Expected<Manifest> m = Manifest::parse(kGood);
  ASSERT_TRUE(m) << m.status().toString();
  EXPECT_EQ(m->model, "mlp");
  EXPECT_EQ(m->flopsPerStep, 1.5e6);
  EXPECT_EQ(m->plannedBytes, 4096);
  ASSERT_EQ(m->buffers.size(), 5u);
  const BufferInfo &w = m->buffers[0];
  EXPECT_EQ(w.role, BufferRole::Param);
  ASSERT_TRUE(w.init);
  EXPECT_EQ(w.init->kind, InitKind::KaimingUniform);
  EXPECT_EQ(w.init->arg("gain", 0), 1.0);
  EXPECT_TRUE(w.init->fanOut);
  EXPECT_EQ(m->buffers[2].spec.dtype, DType::I64);
  EXPECT_TRUE(m->buffers[2].spec.shape.empty());
  std::vector<TensorSpec> state = m->stateSpecs();
  ASSERT_EQ(state.size(), 3u);
  EXPECT_EQ(state[2].name, "step");
  EXPECT_EQ(w.result, 1);
  EXPECT_EQ(w.evalIndex, 0);
  EXPECT_EQ(m->buffers[3].range, 10);
  EXPECT_FALSE(m->buffers[1].evalIndex);
  ASSERT_TRUE(m->trainStep);
  EXPECT_EQ(m->trainStep->args, 4);
  EXPECT_EQ(m->trainStep->results, 4);
  EXPECT_EQ(m->evalStep.args, 2);
  ASSERT_EQ(m->evalResults.size(), 1u);
  EXPECT_EQ(m->evalResults[0].name, "result0");
  ASSERT_NE(m->find("x"), nullptr);
  EXPECT_EQ(m->find("x")->spec.dtype, DType::I32);
  EXPECT_EQ(m->find("y"), nullptr);
}

TEST(Manifest, EvalOnlyModulesHaveNoTrainStep) {
  std::string text = edit("{\"args\": 4, \"results\": 4}", "null");
  Expected<Manifest> m = Manifest::parse(text);
  ASSERT_TRUE(m) << m.status().toString();
  EXPECT_FALSE(m->trainStep);
}

TEST(Manifest, FingerprintTracksStateShapes) {
  std::string a = Manifest::parse(kGood)->fingerprint();
  EXPECT_EQ(a.rfind("mlp:", 0), 0u);
  EXPECT_EQ(a.size(), 4u + 16u);
  EXPECT_EQ(a, Manifest::parse(kGood)->fingerprint());
  // An input's shape (the batch size) does not change the fingerprint...
  Expected<Manifest> wider = Manifest::parse(edit("[8, 3]", "[16, 3]"));
  ASSERT_TRUE(wider) << wider.status().toString();
  EXPECT_EQ(a, wider->fingerprint());
  // ...a parameter's does.
  EXPECT_NE(a, Manifest::parse(edit("[4, 3], \"dtype\": \"f32\", \"role\": "
                                    "\"param\"",
                                    "[5, 3], \"dtype\": \"f32\", \"role\": "
                                    "\"param\""))
                   ->fingerprint());
}

TEST(Manifest, ErrorsNameTheJsonPath) {
  EXPECT_EQ(parseError("{"), "manifest: JSON: expected a string at byte 1");
  EXPECT_EQ(parseError(edit("anvil.manifest", "other")),
            "manifest: format: expected \"anvil.manifest\"");
  EXPECT_EQ(parseError(edit("\"version\": 1", "\"version\": 2")),
            "manifest: version: expected 1 (this runtime reads version 1)");
  EXPECT_EQ(parseError(edit("[4, 3]", "[4, -3]")),
            "manifest: buffers[0] ('fc.weight').shape[1]: expected a "
            "non-negative integer");
  EXPECT_EQ(parseError(edit("\"dtype\": \"i64\"", "\"dtype\": \"u64\""))
                .find("manifest: buffers[2] ('step').dtype: "),
            0u);
  EXPECT_EQ(parseError(edit("\"role\": \"input\"", "\"role\": \"batch\"")),
            "manifest: buffers[3] ('x').role: unknown role 'batch' (param, "
            "state, input, loss, metric)");
  EXPECT_EQ(
      parseError(edit("\"kind\": \"zeros\"", "\"kind\": \"he\""))
          .find("manifest: buffers[1] ('fc.weight.adam_m').init.kind: unknown "
                "initializer 'he'"),
      0u);
  EXPECT_EQ(parseError(edit("\"fan_out\"", "\"out\"")),
            "manifest: buffers[0] ('fc.weight').init.mode: expected "
            "\"fan_in\" or \"fan_out\"");
  EXPECT_EQ(parseError(edit("\"index\": 2, \"init\": {\"kind\": \"zeros\"}",
                            "\"index\": 2")),
            "manifest: buffers[2] ('step'): state needs 'init'");
  EXPECT_EQ(parseError(edit("\"name\": \"step\"", "\"name\": \"fc.weight\"")),
            "manifest: buffers[2].name: 'fc.weight' appears twice");
  EXPECT_EQ(parseError(edit("{\"gain\": 1.0}", "{\"gian\": 1.0}")),
            "manifest: buffers[0] ('fc.weight').init.args.gian: not an "
            "argument of 'kaiming_uniform'");
  EXPECT_EQ(parseError(edit("{\"kind\": \"zeros\"}",
                            "{\"kind\": \"truncated_normal\", \"args\": "
                            "{\"lower\": 1, \"upper\": 1}}")),
            "manifest: buffers[1] ('fc.weight.adam_m').init.args: "
            "truncated_normal needs lower < upper");
  EXPECT_EQ(parseError(edit("\"model\": \"mlp\",", "")),
            "manifest: top level: missing 'model'");
  EXPECT_EQ(parseError(edit("\"result\": 2", "\"result\": 1")),
            "manifest: buffer 'fc.weight.adam_m': result 1 is out of range or "
            "taken twice");
  EXPECT_EQ(parseError(edit("\"range\": 10", "\"range\": -1")),
            "manifest: buffers[3] ('x').range: expected a non-negative "
            "integer");
  EXPECT_EQ(parseError(edit("\"eval_index\": 1", "\"eval_index\": 2")),
            "manifest: buffer 'x': eval_index 2 is out of range or taken "
            "twice");
  EXPECT_EQ(parseError(edit("{\"args\": 4, \"results\": 4}",
                            "{\"args\": 5, \"results\": 4}")),
            "manifest: train_step: not every argument is named by a buffer");
}

TEST(Manifest, ShardedStateIsABlockOfAWholeTensor) {
  // ZeRO over dp = 2: the adam moment of the 4 x 3 weight is a block of 6.
  std::string text = edit("\"planned_bytes\": 4096,",
                          "\"planned_bytes\": 4096, \"mesh\": {\"dp\": 2},");
  std::string sharded =
      "\"shape\": [6], \"dtype\": \"f32\", \"role\": \"state\", "
      "\"sharding\": {\"global_shape\": [4, 3], \"flat_axis\": \"dp\"}";
  std::string whole = "\"shape\": [4, 3], \"dtype\": \"f32\",\n     \"role\": "
                      "\"state\"";
  size_t at = text.find(whole);
  ASSERT_NE(at, std::string::npos);
  Expected<Manifest> m =
      Manifest::parse(std::string(text).replace(at, whole.size(), sharded));
  ASSERT_TRUE(m) << m.status().toString();
  const BufferInfo *b = m->find("fc.weight.adam_m");
  ASSERT_TRUE(b && b->sharding);
  EXPECT_EQ(b->globalSpec().shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(b->layout(m->mesh, std::vector<int64_t>{0}).toJson().dump(),
            R"({"shape":[4,3],"begin":0,"end":6})");
  EXPECT_EQ(b->layout(m->mesh, std::vector<int64_t>{1}).toJson().dump(),
            R"({"shape":[4,3],"begin":6,"end":12})");
  // Checkpoints name whole tensors: the fingerprint is the unsharded one's.
  EXPECT_EQ(m->fingerprint(), Manifest::parse(kGood)->fingerprint());

  // A block of the wrong size, or an axis the mesh does not have.
  std::string wrong = sharded;
  wrong.replace(wrong.find("[6]"), 3, "[5]");
  EXPECT_EQ(parseError(std::string(text).replace(at, whole.size(), wrong)),
            "manifest: buffers[1] ('fc.weight.adam_m').sharding: the part of "
            "[4,3] a rank holds has shape [6], the buffer [5]");
  std::string axis = sharded;
  axis.replace(axis.find("\"dp\""), 4, "\"tp\"");
  EXPECT_EQ(parseError(std::string(text).replace(at, whole.size(), axis)),
            "manifest: buffers[1] ('fc.weight.adam_m').sharding.flat_axis: "
            "'tp' is not an axis of the mesh");
}
