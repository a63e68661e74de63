//===- StepGraph.cpp - which exported functions a CUDA graph can replay --===//
//
// anvil-cuda-step-graph (Passes.td): a function is capturable when its host
// code, followed through the calls it makes, only queues device work whose
// arguments follow from the function's arguments.
//
//===----------------------------------------------------------------------===//

#include "anvil/Target/CUDA/Passes.h"

#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringSet.h"

#include <utility>

namespace mlir::anvil {
#define GEN_PASS_DEF_ANVILCUDASTEPGRAPHPASS
#include "anvil/Target/CUDA/Passes.h.inc"
} // namespace mlir::anvil

using namespace mlir;

namespace {

/// The CUDA runtime's functions that only queue work on the step stream
/// (runtime/include/anvil/runtime/Cuda.h).
bool queuesOnly(StringRef callee) {
  static const llvm::StringSet<> names = {"anvil_rt_cuda_sgemm",
                                          "anvil_rt_cuda_gemm_bf16",
                                          "anvil_rt_cuda_gemm_bf16_rounded",
                                          "anvil_rt_cuda_gemm_f8",
                                          "anvil_rt_cuda_gemm_f8_gelu",
                                          "anvil_rt_cuda_attention_f32",
                                          "anvil_rt_cuda_attention_grad_f32",
                                          "anvil_rt_cuda_attention_bf16",
                                          "anvil_rt_cuda_attention_grad_bf16",
                                          "anvil_rt_cuda_gemm_bias",
                                          "anvil_rt_cuda_gemm_bias_gelu",
                                          "anvil_rt_cuda_gemm_dgelu_bgrad",
                                          "anvil_rt_cuda_gemm_weight_bias_grad",
                                          "anvil_rt_cuda_conv",
                                          "anvil_rt_cuda_embedding_grad_f32"};
  return names.contains(callee);
}

std::string where(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << op->getName() << " at " << op->getLoc();
  return text;
}

/// What `op`'s memory effects are, for a message ("allocates memory").
std::string describeEffects(Operation *op) {
  auto iface = dyn_cast<MemoryEffectOpInterface>(op);
  if (!iface)
    return "has effects the compiler cannot see";
  SmallVector<MemoryEffects::EffectInstance> effects;
  iface.getEffects(effects);
  for (const MemoryEffects::EffectInstance &e : effects) {
    if (isa<MemoryEffects::Allocate>(e.getEffect()))
      return "allocates memory";
    if (isa<MemoryEffects::Free>(e.getEffect()))
      return "frees memory";
    if (isa<MemoryEffects::Write>(e.getEffect()))
      return "writes memory on the host";
  }
  return "reads memory on the host";
}

class Checker {
public:
  explicit Checker(ModuleOp module) : symbols(module) {}

  /// Why `fn`'s host code cannot be replayed, or "" when it can.
  std::string blocker(func::FuncOp fn) {
    if (auto it = verdicts.find(fn); it != verdicts.end())
      return it->second;
    // A function on the call stack (recursion) adds nothing of its own
    // here; it is judged where its walk began. A verdict that relied on
    // one is not kept: the function on the stack may yet be blocked.
    if (!onStack.insert(fn).second) {
      reachedStack = true;
      return "";
    }
    bool outer = std::exchange(reachedStack, false);
    std::string why;
    fn.walk([&](Operation *op) {
      why = blockerOf(op);
      return why.empty() ? WalkResult::advance() : WalkResult::interrupt();
    });
    onStack.erase(fn);
    if (!reachedStack || !why.empty())
      verdicts[fn] = why;
    reachedStack |= outer;
    return why;
  }

private:
  std::string blockerOf(Operation *op) {
    if (isa<gpu::LaunchFuncOp, func::FuncOp>(op))
      return "";
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (callee && !callee.isExternal()) {
        std::string why = blocker(callee);
        return why.empty() ? why : why + " (called from " + where(op) + ")";
      }
      if (queuesOnly(call.getCallee()))
        return "";
      return where(op) + " calls @" + call.getCallee().str() +
             ", which is not a queued library call";
    }
    // The host's globals that may change: a replay would not read them.
    if (auto get = dyn_cast<memref::GetGlobalOp>(op)) {
      auto global = symbols.lookup<memref::GlobalOp>(get.getName());
      if (!global || !global.getConstant())
        return where(op) + " takes the address of @" + get.getName().str() +
               ", a global that is not constant";
      return "";
    }
    // Nested operations are walked on their own.
    if (op->hasTrait<OpTrait::HasRecursiveMemoryEffects>() ||
        op->hasTrait<OpTrait::IsTerminator>())
      return "";
    if (isMemoryEffectFree(op))
      return "";
    return where(op) + " " + describeEffects(op);
  }

  SymbolTable symbols;
  DenseMap<Operation *, std::string> verdicts;
  llvm::SmallPtrSet<Operation *, 8> onStack;
  /// Whether the current walk met a function on the stack.
  bool reachedStack = false;
};

struct AnvilCUDAStepGraphPass
    : anvil::impl::AnvilCUDAStepGraphPassBase<AnvilCUDAStepGraphPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    Checker checker(module);
    MLIRContext *ctx = module.getContext();
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (!fn.isPublic() || fn.isExternal())
        continue;
      std::string why = checker.blocker(fn);
      fn->removeAttr(anvil::AnvilDialect::kGraphCapturableAttrName);
      fn->removeAttr(anvil::AnvilDialect::kGraphBlockerAttrName);
      if (why.empty())
        fn->setAttr(anvil::AnvilDialect::kGraphCapturableAttrName,
                    UnitAttr::get(ctx));
      else
        fn->setAttr(anvil::AnvilDialect::kGraphBlockerAttrName,
                    StringAttr::get(ctx, why));
    }
  }
};

} // namespace
