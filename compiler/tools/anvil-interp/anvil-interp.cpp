//===- anvil-interp.cpp - run an anvil function in the reference interpreter
//===//
//
//   anvil-interp model.mlir --inputs-dir=in/ --output-dir=out/
//   anvil-interp model.mlir --input tokens=tokens.npy --seed=1 --print
//
// Each argument comes from `--input NAME=FILE.npy`, else from
// `<inputs-dir>/<NAME>.npy`, else is drawn at random from `--seed`
// (parameters by their initializer). NAME is the argument's anvil.param or
// anvil.input name, or `arg<i>`. Results go to `<output-dir>/result<i>.npy`.
//
//===----------------------------------------------------------------------===//

#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Interp/Interpreter.h"
#include "anvil/Interp/Npy.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/InterleavedRange.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace llvm;
namespace interp = anvil::interp;

namespace {
cl::OptionCategory category("anvil-interp options");
cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input .mlir>"),
                               cl::init("-"), cl::cat(category));
cl::opt<std::string> functionName("function",
                                  cl::desc("Function to run (default: forward, "
                                           "or the only function)"),
                                  cl::init(""), cl::cat(category));
cl::list<std::string> inputs("input",
                             cl::desc("Argument from a .npy file: NAME=FILE"),
                             cl::value_desc("name=file"), cl::cat(category));
cl::opt<std::string> inputsDir("inputs-dir",
                               cl::desc("Read argument NAME from DIR/NAME.npy"),
                               cl::value_desc("dir"), cl::init(""),
                               cl::cat(category));
cl::opt<uint64_t> seed("seed", cl::desc("Seed of the random arguments"),
                       cl::init(0), cl::cat(category));
cl::opt<int64_t> intHigh("int-high",
                         cl::desc("Random integer arguments lie in [0, N)"),
                         cl::init(2), cl::cat(category));
cl::opt<bool> roundResults(
    "round",
    cl::desc("Round every op's results to its element type (bf16, f16, f8)"),
    cl::cat(category));
cl::opt<std::string> outputDir("output-dir",
                               cl::desc("Write DIR/result<i>.npy"),
                               cl::value_desc("dir"), cl::init(""),
                               cl::cat(category));
cl::opt<bool> print("print", cl::desc("Print the results"), cl::cat(category));
cl::opt<unsigned>
    steps("steps",
          cl::desc("Run the function N times, feeding each result marked "
                   "anvil.tied_to back into its argument (a training loop); "
                   "prints result #0, the loss, after each step"),
          cl::init(1), cl::cat(category));

int error(const Twine &message) {
  WithColor::error(errs(), "anvil-interp") << message << "\n";
  return 1;
}
} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "anvil-interp: evaluate an anvil function in float64 (the reference "
      "interpreter)\n");

  mlir::MLIRContext context;
  context.loadDialect<mlir::anvil::AnvilDialect, mlir::func::FuncDialect>();
  std::string errorMessage;
  auto file = mlir::openInputFile(inputFile, &errorMessage);
  if (!file)
    return error(errorMessage);
  SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), SMLoc());
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;

  // The function: --function, else @forward, else the only one.
  mlir::FunctionOpInterface fn;
  std::vector<std::string> names;
  for (auto f : module->getOps<mlir::FunctionOpInterface>()) {
    names.push_back(f.getName().str());
    if (functionName.empty() ? f.getName() == "forward"
                             : f.getName() == functionName)
      fn = f;
  }
  if (!fn && functionName.empty() && names.size() == 1)
    fn = *module->getOps<mlir::FunctionOpInterface>().begin();
  if (!fn) {
    std::string all;
    for (const std::string &n : names)
      all += (all.empty() ? "@" : ", @") + n;
    return error(
        "no function " +
        (functionName.empty() ? std::string("@forward") : "@" + functionName) +
        " in " + inputFile + " (it has: " + (all.empty() ? "none" : all) + ")");
  }
  if (failed(interp::check(fn)))
    return 1;

  std::map<std::string, std::string> given;
  for (const std::string &spec : inputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      return error("--input expects NAME=FILE, got '" + spec + "'");
    given[spec.substr(0, eq)] = spec.substr(eq + 1);
  }

  std::vector<interp::Buffer> args;
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
    std::string name =
        interp::argumentName(fn, i).value_or("arg" + std::to_string(i));
    auto type = mlir::cast<mlir::RankedTensorType>(fn.getArgumentTypes()[i]);
    std::string path;
    if (auto it = given.find(name); it != given.end()) {
      path = it->second;
      given.erase(it);
    } else if (!inputsDir.empty()) {
      SmallString<256> p(inputsDir);
      sys::path::append(p, name + ".npy");
      if (sys::fs::exists(p))
        path = std::string(p);
    }
    if (path.empty()) {
      args.push_back(interp::randomArgument(fn, i, seed, intHigh));
      continue;
    }
    Expected<interp::Buffer> b = interp::readNpy(path, type.getElementType());
    if (!b)
      return error("argument '" + name + "': " + toString(b.takeError()));
    if (!llvm::equal(b->shape, type.getShape())) {
      std::string message;
      raw_string_ostream os(message);
      os << "argument '" << name << "' from '" << path << "' has shape ["
         << interleaved(b->shape) << "], the function expects " << type;
      return error(message);
    }
    args.push_back(std::move(*b));
  }
  if (!given.empty())
    return error("--input names no argument: '" + given.begin()->first + "'");

  interp::Options options;
  options.roundResults = roundResults;
  mlir::FailureOr<std::vector<interp::Buffer>> results;
  for (unsigned s = 0; s < steps; ++s) {
    results = interp::run(fn, args, options);
    if (failed(results))
      return 1;
    if (steps.getNumOccurrences() == 0)
      break;
    outs() << "step " << s + 1 << ": loss "
           << format("%.9g", (*results)[0].data[0]) << "\n";
    for (unsigned r = 0; r < results->size(); ++r)
      if (auto tied = fn.getResultAttrOfType<mlir::IntegerAttr>(
              r, mlir::anvil::AnvilDialect::kTiedAttrName))
        args[tied.getInt()].data = (*results)[r].data;
  }

  for (auto [i, r] : llvm::enumerate(*results)) {
    if (!outputDir.empty()) {
      if (std::error_code ec = sys::fs::create_directories(outputDir))
        return error("cannot create '" + outputDir + "': " + ec.message());
      SmallString<256> p(outputDir);
      sys::path::append(p, "result" + std::to_string(i) + ".npy");
      if (Error err = interp::writeNpy(std::string(p), r))
        return error(toString(std::move(err)));
    }
    if (print) {
      outs() << "result #" << i << ": " << r.elementType << " [";
      for (int64_t k = 0; k < r.numElements(); ++k)
        outs() << (k ? ", " : "") << format("%.17g", r.data[k]);
      outs() << "]\n";
    }
  }
  return 0;
}
