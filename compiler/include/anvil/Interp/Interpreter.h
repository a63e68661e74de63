//===- Interpreter.h - the reference interpreter of the anvil dialect -*- C++
//-*-===//
//
// `anvil-interp` as a library: evaluates a function of anvil ops, op by op,
// in float64, with the plainest code that can be right. It is the
// executable specification every lowering, fusion, sharding and backend is
// tested against. With `roundResults`, every op's results are rounded to
// its declared element type, so that low-precision numerics can be
// predicted (bf16, f16, f8E4M3FN, f8E5M2).
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_INTERP_INTERPRETER_H
#define ANVIL_INTERP_INTERPRETER_H

#include "anvil/Interp/Buffer.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>
#include <vector>

namespace anvil::interp {

struct Options {
  /// Round each op's results to their element type.
  bool roundResults = false;
};

/// Evaluates `function` on `arguments` (one buffer per argument, shapes as
/// declared). Argument values are first converted to their element types
/// (see convertArgument). Errors (an unsupported op or type, a dynamic shape,
/// an index out of range) are emitted as diagnostics at the op and return
/// failure.
mlir::FailureOr<std::vector<Buffer>> run(mlir::FunctionOpInterface function,
                                         llvm::ArrayRef<Buffer> arguments,
                                         const Options &options = {});

/// Checks that every op of `function` can be evaluated (static, non-empty
/// shapes of at most 2^30 elements, supported element types, an evaluator
/// for the op) without running it.
mlir::LogicalResult check(mlir::FunctionOpInterface function);

/// Rounds float values to `buffer.elementType`; for integer types checks
/// that every value is an integer within 2^53 (exact in a double) that fits
/// the type. Reports the first bad element through `emitError`.
mlir::LogicalResult
convertArgument(Buffer &buffer,
                llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

/// True if the interpreter has an evaluator for ops named `name`.
bool hasEvaluator(mlir::OperationName name);

/// The name an argument carries (`anvil.param`, `anvil.state` or
/// `anvil.input`), if any.
std::optional<std::string> argumentName(mlir::FunctionOpInterface function,
                                        unsigned index);

/// A deterministic value for argument `index`: parameters and training
/// state follow their initializer, float inputs are standard normal, integer
/// inputs uniform in [0, intHigh), booleans fair coins. The stream depends on
/// (seed, index).
Buffer randomArgument(mlir::FunctionOpInterface function, unsigned index,
                      uint64_t seed, int64_t intHigh);

/// The counter-based generator behind dropout masks and random arguments:
/// a uniform double in [0, 1) from (seed, counter), via splitmix64.
double uniform01(uint64_t seed, uint64_t counter);

} // namespace anvil::interp

#endif // ANVIL_INTERP_INTERPRETER_H
