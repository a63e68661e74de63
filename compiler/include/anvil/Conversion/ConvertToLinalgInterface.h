//===- ConvertToLinalgInterface.h - other dialects' lowerings -*- C++ -*-===//
//
// anvil-convert-to-linalg lowers the anvil dialect's ops with its own
// patterns. A dialect of someone else's (a plugin's, loaded with
// --load-dialect-plugin) joins it by attaching this interface: its patterns
// run together with Anvil's, and an op of that dialect left unlowered is an
// error that names it, as an anvil op's is. Everything after (fusion,
// bufferization, the CPU backend) then sees only upstream ops.
//
//   struct MyLowering : mlir::anvil::ConvertToLinalgDialectInterface {
//     using ConvertToLinalgDialectInterface::ConvertToLinalgDialectInterface;
//     void populateConvertToLinalgPatterns(
//         mlir::RewritePatternSet &patterns) const override {
//       patterns.add<LowerMyOp>(patterns.getContext());
//     }
//   };
//   // in MyDialect::initialize(): addInterfaces<MyLowering>();
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_CONVERSION_CONVERTTOLINALGINTERFACE_H
#define ANVIL_CONVERSION_CONVERTTOLINALGINTERFACE_H

#include "mlir/IR/DialectInterface.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::anvil {

/// A dialect's patterns for anvil-convert-to-linalg. They rewrite the
/// dialect's ops (on tensors) into linalg, tensor, arith and math ops.
class ConvertToLinalgDialectInterface
    : public DialectInterface::Base<ConvertToLinalgDialectInterface> {
public:
  ConvertToLinalgDialectInterface(Dialect *dialect) : Base(dialect) {}

  /// Adds the patterns that lower this dialect's ops.
  virtual void
  populateConvertToLinalgPatterns(RewritePatternSet &patterns) const = 0;
};

} // namespace mlir::anvil

MLIR_DECLARE_EXPLICIT_TYPE_ID(mlir::anvil::ConvertToLinalgDialectInterface)

#endif // ANVIL_CONVERSION_CONVERTTOLINALGINTERFACE_H
