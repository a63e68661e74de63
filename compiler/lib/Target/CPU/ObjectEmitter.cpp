//===- ObjectEmitter.cpp - LLVM dialect to a host object file -------------===//
//
// 1. Translate the LLVM-dialect module to LLVM IR.
// 2. Add the executable's C ABI: `const char *anvil_module_manifest()`
//    returns the embedded JSON; `int32_t anvil_module_init(uint64_t seed,
//    void **args)` initializes the state through the runtime; `void
//    anvil_module_<entry>(void **args, void **results, void *workspace)` calls
//    the lowered function with its arguments, its out-parameters and the
//    workspace of the memory plan (bare pointers, see Pipeline.cpp). Outlined
//    dispatch regions are marked noinline.
// 3. Target the host: its triple, CPU name and features (so the loop
//    vectorizer uses AVX2 / AVX-512 where present), PIC.
// 4. Run LLVM's O3 module pipeline and emit an object file in-process.
//
//===----------------------------------------------------------------------===//

#include "anvil/Target/CPU/CPUBackend.h"

#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

using namespace mlir;

namespace {

/// The host's TargetMachine, or null with `error` set.
std::unique_ptr<llvm::TargetMachine> hostMachine(std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  llvm::SubtargetFeatures features;
  for (const auto &[name, enabled] : llvm::sys::getHostCPUFeatures())
    features.AddFeature(name, enabled);
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), features.getString(),
      llvm::TargetOptions(), llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
}

/// Adds `const char *anvil_module_manifest(void)` and `int32_t
/// anvil_module_init(uint64_t seed, void **args)`, which hands the manifest
/// to the runtime's initializers (anvil_rt_init_state).
void addManifestAndInit(llvm::Module &m, StringRef json) {
  llvm::LLVMContext &ctx = m.getContext();
  auto *data = llvm::ConstantDataArray::getString(ctx, json, /*AddNull=*/true);
  auto *global = new llvm::GlobalVariable(
      m, data->getType(), /*isConstant=*/true,
      llvm::GlobalValue::PrivateLinkage, data, "anvil_manifest_json");
  auto *fnType = llvm::FunctionType::get(llvm::PointerType::get(ctx, 0), false);
  auto *fn = llvm::Function::Create(fnType, llvm::GlobalValue::ExternalLinkage,
                                    "anvil_module_manifest", m);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  b.CreateRet(global);

  auto *ptr = llvm::PointerType::get(ctx, 0);
  auto *i32 = llvm::Type::getInt32Ty(ctx), *i64 = llvm::Type::getInt64Ty(ctx);
  llvm::FunctionCallee initState = m.getOrInsertFunction(
      "anvil_rt_init_state",
      llvm::FunctionType::get(i32, {ptr, i64, ptr}, false));
  auto *init = llvm::Function::Create(
      llvm::FunctionType::get(i32, {i64, ptr}, false),
      llvm::GlobalValue::ExternalLinkage, "anvil_module_init", m);
  llvm::IRBuilder<> ib(llvm::BasicBlock::Create(ctx, "entry", init));
  ib.CreateRet(
      ib.CreateCall(initState, {global, init->getArg(0), init->getArg(1)}));
}

/// Makes each dispatch function `D` that has a chunk function
/// `D__chunk_of_<R>` (anvil-cpu-parallel-dispatches) run on the runtime's
/// threads: a trampoline `void (void *ctx, i64 lo, i64 hi)` unpacks D's
/// pointer arguments from `ctx` and calls the chunk, and D's body becomes
/// `anvil_rt_parallel_for(R, trampoline, ctx)` with its arguments packed
/// on the stack. Dispatches with non-pointer arguments stay sequential.
void parallelizeDispatches(llvm::Module &m) {
  llvm::LLVMContext &ctx = m.getContext();
  auto *ptr = llvm::PointerType::get(ctx, 0);
  auto *i64 = llvm::Type::getInt64Ty(ctx);
  auto *voidTy = llvm::Type::getVoidTy(ctx);
  auto *kernelType = llvm::FunctionType::get(voidTy, {ptr, i64, i64}, false);
  llvm::FunctionCallee parallelFor = m.getOrInsertFunction(
      "anvil_rt_parallel_for",
      llvm::FunctionType::get(voidTy, {i64, ptr, ptr}, false));
  SmallVector<llvm::Function *> chunks;
  for (llvm::Function &f : m)
    if (f.getName().contains("__chunk_of_") && !f.isDeclaration())
      chunks.push_back(&f);
  for (llvm::Function *chunk : chunks) {
    auto [name, extent] = chunk->getName().rsplit("__chunk_of_");
    llvm::Function *dispatch = m.getFunction(name);
    int64_t range = 0;
    if (!dispatch || extent.getAsInteger(10, range) ||
        dispatch->arg_size() + 2 != chunk->arg_size() ||
        llvm::any_of(dispatch->args(),
                     [&](llvm::Argument &a) { return a.getType() != ptr; }))
      continue;
    unsigned n = dispatch->arg_size();
    auto *trampoline =
        llvm::Function::Create(kernelType, llvm::GlobalValue::InternalLinkage,
                               chunk->getName() + "__trampoline", m);
    {
      llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", trampoline));
      SmallVector<llvm::Value *> args;
      for (unsigned i = 0; i < n; ++i)
        args.push_back(b.CreateLoad(
            ptr, b.CreateConstInBoundsGEP1_64(ptr, trampoline->getArg(0), i)));
      args.push_back(trampoline->getArg(1));
      args.push_back(trampoline->getArg(2));
      b.CreateCall(chunk, args);
      b.CreateRetVoid();
    }
    llvm::GlobalValue::LinkageTypes linkage = dispatch->getLinkage();
    dispatch->deleteBody();
    dispatch->setLinkage(linkage);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", dispatch));
    llvm::Value *packed =
        b.CreateAlloca(ptr, b.getInt64(std::max(n, 1u)), "buffers");
    for (unsigned i = 0; i < n; ++i)
      b.CreateStore(dispatch->getArg(i),
                    b.CreateConstInBoundsGEP1_64(ptr, packed, i));
    b.CreateCall(parallelFor, {b.getInt64(range), trampoline, packed});
    b.CreateRetVoid();
  }
}

/// Adds `void anvil_module_<abiName>(void **args, void **results, void
/// *workspace)`.
LogicalResult addEntry(llvm::Module &m, const anvil::EntryPoint &entry,
                       std::string &error) {
  llvm::Function *impl = m.getFunction(entry.function);
  if (!impl) {
    error = "the lowered module has no function '" + entry.function + "'";
    return failure();
  }
  if (impl->arg_size() != entry.numArgs + entry.numResults + 1) {
    error = "'" + entry.function + "' takes " +
            std::to_string(impl->arg_size()) + " pointers, expected " +
            std::to_string(entry.numArgs) + " arguments + " +
            std::to_string(entry.numResults) + " results + the workspace";
    return failure();
  }
  llvm::LLVMContext &ctx = m.getContext();
  auto *ptr = llvm::PointerType::get(ctx, 0);
  auto *fnType = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx),
                                         {ptr, ptr, ptr}, false);
  auto *fn = llvm::Function::Create(fnType, llvm::GlobalValue::ExternalLinkage,
                                    "anvil_module_" + entry.abiName, m);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  SmallVector<llvm::Value *> operands;
  auto load = [&](llvm::Value *array, unsigned i) {
    llvm::Value *slot = b.CreateConstInBoundsGEP1_64(ptr, array, i);
    return b.CreateLoad(ptr, slot);
  };
  for (unsigned i = 0; i < entry.numArgs; ++i)
    operands.push_back(load(fn->getArg(0), i));
  for (unsigned i = 0; i < entry.numResults; ++i)
    operands.push_back(load(fn->getArg(1), i));
  operands.push_back(fn->getArg(2));
  b.CreateCall(impl, operands);
  b.CreateRetVoid();
  return success();
}

} // namespace

LogicalResult mlir::anvil::cpu::emitObjectFile(ModuleOp module,
                                               const ModuleABI &abi,
                                               StringRef path,
                                               unsigned optLevel) {
  auto fail = [&](const Twine &message) {
    return emitError(module.getLoc(), "anvil cpu backend: ") << message;
  };
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> m =
      translateModuleToLLVMIR(module, llvmContext, "anvil_module");
  if (!m)
    return fail("translation to LLVM IR failed");

  // Kernels stay functions: inlining them back would rebuild the one huge
  // function that makes LLVM slow, and keeps them visible to profilers.
  for (llvm::Function &f : *m)
    if (f.getName().contains("__dispatch_"))
      f.addFnAttr(llvm::Attribute::NoInline);

  parallelizeDispatches(*m);

  std::string error;
  addManifestAndInit(*m, abi.manifest);
  for (const EntryPoint &entry : abi.entries)
    if (failed(addEntry(*m, entry, error)))
      return fail(error);

  std::unique_ptr<llvm::TargetMachine> machine = hostMachine(error);
  if (!machine)
    return fail("no LLVM target for this host: " + error);
  m->setTargetTriple(machine->getTargetTriple());
  m->setDataLayout(machine->createDataLayout());
  llvm::raw_string_ostream verifyErrors(error);
  if (llvm::verifyModule(*m, &verifyErrors))
    return fail("invalid LLVM IR: " + error);

  // The -O<n> pipeline, as clang would run it for this machine.
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder passBuilder(machine.get());
  passBuilder.registerModuleAnalyses(mam);
  passBuilder.registerCGSCCAnalyses(cgam);
  passBuilder.registerFunctionAnalyses(fam);
  passBuilder.registerLoopAnalyses(lam);
  passBuilder.crossRegisterProxies(lam, fam, cgam, mam);
  const llvm::OptimizationLevel levels[] = {
      llvm::OptimizationLevel::O0, llvm::OptimizationLevel::O1,
      llvm::OptimizationLevel::O2, llvm::OptimizationLevel::O3};
  llvm::ModulePassManager mpm =
      passBuilder.buildPerModuleDefaultPipeline(levels[std::min(optLevel, 3u)]);
  mpm.run(*m, mam);

  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return fail("cannot write '" + path + "': " + ec.message());
  llvm::legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, out, nullptr,
                                   llvm::CodeGenFileType::ObjectFile))
    return fail("the host target cannot emit object files");
  codegen.run(*m);
  out.close();
  if (out.has_error())
    return fail("cannot write '" + path + "': " + out.error().message());
  return success();
}
