//===- Program.cpp - what anvil-plan reads off the compiled program -------===//
//
// 1. Build the zoo model with the requested layers, micro-batch and
//    sequence; mark its Megatron layout and run anvil-partition (tp, and
//    sequence parallelism), then anvil-fp8 for FP8, then anvil-autodiff.
// 2. Read @forward_grad op by op: matmuls (shapes, FP8 operands, forward
//    or backward), attention (forward FLOPs; the ops that carry its
//    location, its VJP's recompute and products and the heads' split and
//    merge, are what a fused attention kernel does), collectives over tp,
//    and the bytes every other op moves (CostOpInterface).
//
// The program computes in f32; the planner prices activations, gradients
// and collectives at 2 bytes per element (bf16), as the mixed-precision
// step on a GPU moves them.
//
//===----------------------------------------------------------------------===//

#include "Program.h"

#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Dialect/Anvil/IR/AnvilInterfaces.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"
#include "anvil/Frontend/Graph.h"
#include "anvil/Frontend/Models/Registry.h"
#include "anvil/Training/Autodiff.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace ad = mlir::anvil;

namespace anvil::plan {
namespace {

constexpr double kBytesPerElement = 2.0; // bf16 activations and gradients

double elements(Type type) {
  return static_cast<double>(cast<RankedTensorType>(type).getNumElements());
}

/// Runs `pipeline` on `module`, capturing diagnostics into `error`.
bool run(ModuleOp module, const std::string &pipeline, std::string &error) {
  PassManager pm(module.getContext());
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  ScopedDiagnosticHandler handler(module.getContext(), [&](Diagnostic &d) {
    os << d.str() << "\n";
    return success();
  });
  if (failed(parsePassPipeline(pipeline, pm)) || failed(pm.run(module))) {
    error = pipeline + " failed: " + diagnostics;
    return false;
  }
  return true;
}

std::string str(int64_t v) { return std::to_string(v); }

} // namespace

std::optional<ProgramFacts> readProgram(MLIRContext &context,
                                        const ProgramRequest &request,
                                        std::string &error) {
  auto overrides = request.overrides;
  overrides.push_back({"layers", str(request.layers)});
  overrides.push_back({"batch", str(request.microBatch)});
  overrides.push_back({"seq_len", str(request.sequence)});
  frontend::BuiltModel built;
  try {
    built =
        frontend::buildModel(context, request.model, request.config, overrides);
  } catch (const frontend::BuildError &e) {
    error = e.what();
    return std::nullopt;
  }
  ModuleOp module = *built.module;
  const frontend::ModelInfo *info = frontend::findModel(request.model);
  if (request.tensorParallel > 1) {
    Builder b(&context);
    module->setAttr(ad::AnvilDialect::kMeshAttrName,
                    b.getDictionaryAttr(b.getNamedAttr(
                        "tp", b.getI64IntegerAttr(request.tensorParallel))));
    if (!info || !frontend::markTensorParallelLayout(module, *info)) {
      error = "model '" + request.model + "' has no tensor-parallel layout";
      return std::nullopt;
    }
    if (!run(module,
             "anvil-partition{axis=tp sequence-parallel=" +
                 std::string(request.sequenceParallel ? "true" : "false") + "}",
             error))
      return std::nullopt;
  }
  if (request.fp8 &&
      !run(module,
           std::string("anvil-fp8{recipe=current") +
               (request.tensorParallel > 1 ? " amax-axis=tp" : "") +
               "},cse", // one quantization of an input several GEMMs read
           error))
    return std::nullopt;
  if (!run(module, "anvil-autodiff", error))
    return std::nullopt;
  auto step = module.lookupSymbol<func::FuncOp>("forward_grad");
  if (!step) {
    error = "anvil-autodiff made no @forward_grad";
    return std::nullopt;
  }

  ProgramFacts f;
  f.layers = request.layers;
  for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i)
    if (auto p = step.getArgAttrOfType<ad::ParamAttr>(
            i, ad::AnvilDialect::kParamAttrName)) {
      if (p.getBuffer())
        continue;
      double n = elements(step.getArgumentTypes()[i]);
      f.parameters += n;
      if (p.getTrainable())
        f.trainableParameters += n;
      // A weight that every use reads in FP8 is kept in FP8 only
      // (Transformer Engine's FP8 primary weights; a trainable one's f32
      // master copy is optimizer state).
      if (!step.getArgument(i).use_empty() &&
          llvm::all_of(step.getArgument(i).getUsers(), [](Operation *user) {
            auto q = dyn_cast<ad::Fp8QuantizeOp>(user);
            return q && q.getForward();
          })) {
        f.fp8OnlyParameters += n;
        if (p.getTrainable())
          f.fp8OnlyTrainable += n;
      }
    }

  // The forward pass: what the loss depends on.
  auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
  llvm::DenseSet<Operation *> forward = ad::lossForwardOps(step);
  // Values computed from the batch (not from parameters alone).
  llvm::DenseSet<Operation *> fromBatch;
  step.walk([&](Operation *op) {
    if (llvm::any_of(op->getOperands(), [&](Value v) {
          if (auto arg = dyn_cast<BlockArgument>(v))
            return !step.getArgAttr(arg.getArgNumber(),
                                    ad::AnvilDialect::kParamAttrName);
          return fromBatch.contains(v.getDefiningOp());
        }))
      fromBatch.insert(op);
  });
  // A value all-gathered over tp (sequence parallelism), through moves and
  // quantization: the backward pass keeps the rank's part and gathers it
  // again (Megatron's and Transformer Engine's choice).
  auto gathered = [](Value v) {
    while (Operation *def = v.getDefiningOp()) {
      if (auto g = dyn_cast<ad::AllGatherOp>(def))
        return g.getAxis() == "tp";
      if (!isa<ad::Fp8QuantizeOp, ad::TransposeOp, ad::ReshapeOp>(def))
        return false;
      v = def->getOperand(0);
    }
    return false;
  };
  // Forward values the backward pass reads: activations, at 2 bytes per
  // element (1 for an FP8-quantized value). Values of the parameters alone
  // (their FP8 copies) are weights, kept once whatever the micro-batches.
  for (Operation *op : forward) {
    if (op->getNumOperands() == 0)
      continue;
    auto quantize = dyn_cast<ad::Fp8QuantizeOp>(op);
    double bytesPerElement =
        quantize && quantize.getForward() ? 1.0 : kBytesPerElement;
    for (Value v : op->getResults())
      if (llvm::any_of(v.getUsers(), [&](Operation *user) {
            return !forward.contains(user) && user != ret;
          })) {
        double bytes = elements(v.getType()) * bytesPerElement;
        if (!fromBatch.contains(op)) {
          f.weightCopyBytes += bytes;
        } else if (request.tensorParallel > 1 && gathered(v)) {
          f.activationBytes += bytes / request.tensorParallel;
          f.tpCollectives.push_back({Collective::AllGather, bytes});
        } else {
          f.activationBytes += bytes;
        }
      }
  }

  llvm::DenseSet<Location> attentionLocations;
  step.walk([&](ad::AttentionOp op) {
    attentionLocations.insert(op.getLoc());
    f.attentionFlops += static_cast<double>(op.getFlops());
    f.keyValueBytes +=
        (elements(op.getKey().getType()) + elements(op.getValue().getType())) *
        kBytesPerElement;
  });
  auto fromFP8 = [](Value v) {
    if (auto r = v.getDefiningOp<ad::ReshapeOp>())
      v = r.getOperand(); // a shared weight's dW reads its operands as rows
    auto q = v.getDefiningOp<ad::Fp8QuantizeOp>();
    return q && q.getForward();
  };
  step.walk([&](Operation *op) {
    if (isa<ad::AttentionOp>(op) || isa<func::FuncOp, func::ReturnOp>(op))
      return;
    if (attentionLocations.contains(op->getLoc()))
      return; // inside the fused attention
    if (auto mm = dyn_cast<ad::MatmulOp>(op)) {
      auto out = mm.getType();
      int64_t rank = out.getRank();
      auto lhs = mm.getLhs().getType();
      Gemm g;
      g.m = static_cast<double>(out.getDimSize(rank - 2));
      g.n = static_cast<double>(out.getDimSize(rank - 1));
      g.k = static_cast<double>(
          lhs.getDimSize(lhs.getRank() - (mm.getTransposeLhs() ? 2 : 1)));
      g.batch = elements(out) / (g.m * g.n);
      g.fp8 = fromFP8(mm.getLhs()) && fromFP8(mm.getRhs());
      g.forward = forward.contains(op);
      // The first layer's first GEMM reads the layer's (normalized) input:
      // what full recomputation keeps, one sequence-parallel part of it.
      if (g.forward && f.layerInputBytes == 0)
        f.layerInputBytes = elements(mm.getLhs().getType()) * kBytesPerElement /
                            static_cast<double>(request.sequenceParallel
                                                    ? request.tensorParallel
                                                    : 1);
      f.gemms.push_back(g);
      return;
    }
    auto onTp = [](StringRef axis) { return axis == "tp"; };
    if (auto c = dyn_cast<ad::AllReduceOp>(op)) {
      if (onTp(c.getAxis()))
        f.tpCollectives.push_back(
            {Collective::AllReduce,
             elements(c.getOperand().getType()) * kBytesPerElement});
      return;
    }
    if (auto c = dyn_cast<ad::AllGatherOp>(op)) {
      if (onTp(c.getAxis()))
        f.tpCollectives.push_back(
            {Collective::AllGather, elements(c.getType()) * kBytesPerElement});
      return;
    }
    if (auto c = dyn_cast<ad::ReduceScatterOp>(op)) {
      if (onTp(c.getAxis()))
        f.tpCollectives.push_back(
            {Collective::ReduceScatter,
             elements(c.getOperand().getType()) * kBytesPerElement});
      return;
    }
    if (auto cost = dyn_cast<ad::CostOpInterface>(op)) {
      // The program's f32 bytes at the step's 2 bytes per element.
      double bytes = static_cast<double>(cost.getBytesMoved()) / 2.0;
      (forward.contains(op) ? f.forwardBytes : f.backwardBytes) += bytes;
    }
  });
  return f;
}

std::optional<ModelShape> readModelShape(
    MLIRContext &context, const std::string &model, const std::string &config,
    const std::vector<std::pair<std::string, std::string>> &overrides,
    int64_t sequence, std::string &error) {
  auto o = overrides;
  o.push_back({"batch", "1"});
  o.push_back({"seq_len", str(sequence)});
  frontend::BuiltModel built;
  try {
    built = frontend::buildModel(context, model, config, o);
  } catch (const frontend::BuildError &e) {
    error = e.what();
    return std::nullopt;
  }
  ModelShape shape;
  shape.flopsPerSequence = static_cast<double>(built.report.flopsPerStep);
  shape.parameters = static_cast<double>(built.report.parameters);
  // The blocks: the numbered modules in the parameters' names.
  llvm::StringSet<> blocks;
  for (auto fn : built.module->getOps<func::FuncOp>())
    for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
      if (auto p = fn.getArgAttrOfType<ad::ParamAttr>(
              i, ad::AnvilDialect::kParamAttrName)) {
        SmallVector<StringRef> parts;
        p.getName().split(parts, '.');
        for (StringRef part : parts)
          if (!part.empty() && llvm::all_of(part, [](char ch) {
                return ch >= '0' && ch <= '9';
              })) {
            blocks.insert(part);
            break;
          }
      }
  shape.layers = static_cast<int64_t>(blocks.size());
  if (shape.layers == 0) {
    error = "model '" + model + "' has no numbered blocks to pipeline";
    return std::nullopt;
  }
  return shape;
}

} // namespace anvil::plan
