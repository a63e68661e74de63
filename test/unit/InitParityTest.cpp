//===- InitParityTest.cpp - runtime initializers against the interpreter --===//
//
// An executable's initial state must be bit-identical to anvil-interp's for
// the same seed (so their training runs can be compared step by step). This
// test builds every initializer kind on odd shapes, including fan_out and
// 4-D convolution weights, converts each #anvil.init the way a manifest
// carries it (kind name, numeric args, mode) and compares the runtime's f32
// values with the interpreter's bit for bit. It is the one binary that links
// both sides; neither library depends on the other.
//
//===----------------------------------------------------------------------===//

#include "anvil/Dialect/Anvil/IR/AnvilOps.h"
#include "anvil/Interp/Interpreter.h"
#include "anvil/runtime/Init.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace mlir;
namespace ad = mlir::anvil;
namespace rt = ::anvil::rt;
namespace interp = ::anvil::interp;

namespace {

/// The manifest's form of an initializer.
rt::InitSpec toSpec(ad::InitializerAttr init) {
  rt::InitSpec spec;
  auto kind = rt::parseInitKind(ad::stringifyInitKind(init.getKind()));
  EXPECT_TRUE(kind) << kind.status().toString();
  spec.kind = *kind;
  for (NamedAttribute a : init.getArgs()) {
    if (auto f = dyn_cast<FloatAttr>(a.getValue()))
      spec.args[a.getName().str()] = f.getValueAsDouble();
    else if (a.getName() == "mode")
      spec.fanOut = cast<StringAttr>(a.getValue()).getValue() == "fan_out";
  }
  return spec;
}

} // namespace

TEST(InitParity, RuntimeMatchesInterpreterBitForBit) {
  MLIRContext context;
  context.loadDialect<ad::AnvilDialect, func::FuncDialect>();
  const char *source = R"mlir(
    func.func @f(
      %z: tensor<3xf32> {anvil.param = #anvil.param<name = "z", init = #anvil.init<zeros>>},
      %o: tensor<2x3xf32> {anvil.param = #anvil.param<name = "o", init = #anvil.init<ones>>},
      %c: tensor<5xf32> {anvil.param = #anvil.param<name = "c", init = #anvil.init<constant(value = 0.3)>>},
      %n: tensor<7x13xf32> {anvil.param = #anvil.param<name = "n", init = #anvil.init<normal(std = 0.02)>>},
      %t: tensor<33xf32> {anvil.param = #anvil.param<name = "t", init = #anvil.init<truncated_normal(std = 6.0e-3, mean = 0.1, lower = -1.0, upper = 1.5)>>},
      %u: tensor<9x5xf32> {anvil.param = #anvil.param<name = "u", init = #anvil.init<uniform(low = -0.5, high = 2.0)>>},
      %xu: tensor<6x10xf32> {anvil.param = #anvil.param<name = "xu", init = #anvil.init<xavier_uniform>>},
      %xn: tensor<10x6xf32> {anvil.param = #anvil.param<name = "xn", init = #anvil.init<xavier_normal(gain = 2.0)>>},
      %ku: tensor<8x4x3x3xf32> {anvil.param = #anvil.param<name = "ku", init = #anvil.init<kaiming_uniform(gain = 1.0)>>},
      %kn: tensor<5x3x2xf32> {anvil.param = #anvil.param<name = "kn", init = #anvil.init<kaiming_normal(mode = fan_out)>>}
    ) { return }
  )mlir";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(module);
  auto f = cast<FunctionOpInterface>(module->lookupSymbol("f"));
  for (uint64_t seed : {0ull, 1ull, 1234567ull}) {
    for (unsigned i = 0; i < f.getNumArguments(); ++i) {
      auto param = f.getArgAttrOfType<ad::ParamAttr>(
          i, ad::AnvilDialect::kParamAttrName);
      ASSERT_TRUE(param);
      auto type = cast<RankedTensorType>(f.getArgumentTypes()[i]);
      interp::Buffer want = interp::randomArgument(f, i, seed, /*intHigh=*/0);
      std::vector<float> got(want.data.size());
      rt::Status s = rt::initialize(toSpec(param.getInit()), seed, i,
                                    type.getShape(), rt::DType::F32,
                                    std::as_writable_bytes(std::span(got)));
      ASSERT_TRUE(s) << s.toString();
      int mismatches = 0;
      for (size_t k = 0; k < got.size(); ++k) {
        float w = static_cast<float>(want.data[k]);
        if (std::memcmp(&w, &got[k], 4) != 0 && mismatches++ < 3)
          ADD_FAILURE() << param.getName().str() << "[" << k << "] seed "
                        << seed << ": runtime " << got[k] << ", interpreter "
                        << w;
      }
      EXPECT_EQ(mismatches, 0) << param.getName().str();
    }
  }
}

TEST(InitParity, RuntimeRejectsWhatItCannotInitialize) {
  std::vector<std::byte> buf(8);
  int64_t shape[] = {4};
  rt::InitSpec normal{rt::InitKind::Normal, {}, false};
  EXPECT_FALSE(rt::initialize(normal, 0, 0, shape, rt::DType::BF16, buf));
  EXPECT_FALSE(rt::initialize(normal, 0, 0, shape, rt::DType::F32,
                              buf)); // 8 != 16
  rt::InitSpec ones{rt::InitKind::Ones, {}, false};
  int64_t one[] = {1};
  EXPECT_TRUE(rt::initialize(ones, 0, 0, one, rt::DType::I64, buf));
  int64_t v;
  std::memcpy(&v, buf.data(), 8);
  EXPECT_EQ(v, 1);
  // Integers round like the interpreter: truncate, saturate, NaN to 0.
  rt::InitSpec big{rt::InitKind::Constant, {{"value", 3e9}}, false};
  std::vector<std::byte> four(4);
  ASSERT_TRUE(rt::initialize(big, 0, 0, one, rt::DType::I32, four));
  int32_t i32;
  std::memcpy(&i32, four.data(), 4);
  EXPECT_EQ(i32, INT32_MAX);
  big.args["value"] = -2.7;
  ASSERT_TRUE(rt::initialize(big, 0, 0, one, rt::DType::I32, four));
  std::memcpy(&i32, four.data(), 4);
  EXPECT_EQ(i32, -2);
  big.args["value"] = 1e30;
  ASSERT_TRUE(rt::initialize(big, 0, 0, one, rt::DType::I64, buf));
  std::memcpy(&v, buf.data(), 8);
  EXPECT_EQ(v, INT64_MAX);
  rt::InitSpec empty{
      rt::InitKind::TruncatedNormal, {{"lower", 1.0}, {"upper", 1.0}}, false};
  EXPECT_FALSE(rt::initialize(empty, 0, 0, one, rt::DType::F32, four));
  auto bad = rt::parseInitKind("he_normal");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("known: zeros, ones"),
            std::string::npos);
}
