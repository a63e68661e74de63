//===- Evaluators.h - the table of op evaluators (private) -------*- C++
//-*-===//
//
// One evaluator per anvil op, registered by op type in a table. The table
// is the interpreter's one place that names ops: each evaluator is the
// definition of its op's semantics, written for clarity, not speed.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_LIB_INTERP_EVALUATORS_H
#define ANVIL_LIB_INTERP_EVALUATORS_H

#include "anvil/Dialect/Anvil/IR/AnvilOps.h"
#include "anvil/Interp/Buffer.h"

#include "llvm/ADT/DenseMap.h"

#include <functional>

namespace anvil::interp {

/// Computes the results of `op` from its operands. `results` arrives with
/// one zero-filled buffer per result, shaped and typed as declared.
using Evaluator = std::function<mlir::LogicalResult(
    mlir::Operation *op, llvm::ArrayRef<const Buffer *> operands,
    std::vector<Buffer> &results)>;

class EvaluatorTable {
public:
  template <typename OpTy, typename Fn> void add(Fn fn) {
    table_[mlir::TypeID::get<OpTy>()] =
        [fn](mlir::Operation *op, llvm::ArrayRef<const Buffer *> operands,
             std::vector<Buffer> &results) {
          return fn(mlir::cast<OpTy>(op), operands, results);
        };
  }
  const Evaluator *lookup(mlir::OperationName name) const {
    auto it = table_.find(name.getTypeID());
    return it == table_.end() ? nullptr : &it->second;
  }

private:
  llvm::DenseMap<mlir::TypeID, Evaluator> table_;
};

void registerElementwiseEvaluators(EvaluatorTable &table);
void registerShapeEvaluators(EvaluatorTable &table);
void registerNNEvaluators(EvaluatorTable &table);
void registerLossEvaluators(EvaluatorTable &table);

/// GELU's tanh approximation, 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715
/// x^3))), and its derivative.
double geluTanh(double x);
double geluTanhDerivative(double x);

/// Applies a loss reduction to per-element losses: the mean divides by
/// `count` (the number of contributing elements).
void reduceLoss(mlir::anvil::Reduction reduction,
                const std::vector<double> &losses, double count, Buffer &out);

} // namespace anvil::interp

#endif // ANVIL_LIB_INTERP_EVALUATORS_H
