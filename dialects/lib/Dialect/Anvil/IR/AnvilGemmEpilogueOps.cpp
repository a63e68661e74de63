//===- AnvilGemmEpilogueOps.cpp - GEMMs with epilogues: types -------------===//
//
// Type inference of the ops of AnvilGemmEpilogueOps.td.
//
//===----------------------------------------------------------------------===//

#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "OpVerification.h"

using namespace mlir;
using namespace mlir::anvil;
using namespace mlir::anvil::detail;

/// The product of a fused linear layer's GEMM: `lhs` (..., M, K) times the
/// shared `rhs`, (K, N) or with `tr` (N, K), of one float type.
template <typename OpTy>
static FailureOr<RankedTensorType> inferLinear(std::optional<Location> loc,
                                               RankedTensorType lhs,
                                               RankedTensorType rhs, bool tr) {
  Fail<OpTy> fail{loc};
  if (lhs.getElementType() != rhs.getElementType()) {
    (void)fail("lhs and rhs must have one element type, got ", lhs, " and ",
               rhs);
    return failure();
  }
  if (rhs.getRank() != 2) {
    (void)fail("rhs must be a matrix shared by every row of lhs, got ", rhs);
    return failure();
  }
  SmallVector<Type> product;
  if (failed(inferMatmul<OpTy>(loc, lhs, rhs, false, tr, lhs.getElementType(),
                               product)))
    return failure();
  return cast<RankedTensorType>(product[0]);
}

/// The (N) bias added to the rows of `rows` (..., N), and its gradient: of
/// the rows' type, as cuBLASLt takes and gives them for a bf16 GEMM.
static RankedTensorType biasType(RankedTensorType rows) {
  return RankedTensorType::get({rows.getShape().back()}, rows.getElementType());
}

/// The results of a linear layer with its bias (anvil.linear,
/// anvil.linear_gelu): `results` times inferLinear's product, with `bias`
/// one per column of it.
template <typename OpTy, typename Adaptor>
static LogicalResult inferLinearWithBias(std::optional<Location> loc,
                                         Adaptor adaptor, unsigned results,
                                         SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> product = inferLinear<OpTy>(
      loc, tensorType(adaptor.getLhs()), tensorType(adaptor.getRhs()),
      adaptor.getTransposeRhs());
  if (failed(product))
    return failure();
  RankedTensorType bias = tensorType(adaptor.getBias());
  if (bias != biasType(*product))
    return Fail<OpTy>{loc}("bias must be ", biasType(*product),
                           " (one per column of the product ", *product,
                           "), got ", bias);
  inferred.append(results, *product);
  return success();
}

LogicalResult LinearOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  return inferLinearWithBias<LinearOp>(loc, adaptor, 1, inferred);
}

LogicalResult LinearGeluOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  // The GELU and `pre`.
  return inferLinearWithBias<LinearGeluOp>(loc, adaptor, 2, inferred);
}

LogicalResult
GeluBiasGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                 Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  RankedTensorType grad = tensorType(adaptor.getGrad());
  RankedTensorType pre = tensorType(adaptor.getPre());
  if (grad != pre)
    return Fail<GeluBiasGradOp>{loc}("grad and pre must have one type, got ",
                                     grad, " and ", pre);
  inferred.append({grad, biasType(grad)});
  return success();
}

LogicalResult MatmulGeluBiasGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> product = inferLinear<MatmulGeluBiasGradOp>(
      loc, tensorType(adaptor.getLhs()), tensorType(adaptor.getRhs()),
      adaptor.getTransposeRhs());
  if (failed(product))
    return failure();
  RankedTensorType pre = tensorType(adaptor.getPre());
  if (pre != *product)
    return Fail<MatmulGeluBiasGradOp>{loc}("pre must be the product's type ",
                                           *product, ", got ", pre);
  inferred.append({*product, biasType(*product)});
  return success();
}

LogicalResult
MatmulBiasGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                   Adaptor adaptor,
                                   SmallVectorImpl<Type> &inferred) {
  RankedTensorType lhs = tensorType(adaptor.getLhs());
  RankedTensorType grad = tensorType(adaptor.getGrad());
  if (lhs.getRank() != 2 || grad.getRank() != 2 ||
      lhs.getElementType() != grad.getElementType() ||
      lhs.getDimSize(0) != grad.getDimSize(0))
    return Fail<MatmulBiasGradOp>{loc}(
        "lhs and grad must be (M, K) and (M, N) matrices of one element "
        "type, got ",
        lhs, " and ", grad);
  Type element = lhs.getElementType();
  inferred.append(
      {RankedTensorType::get({lhs.getDimSize(1), grad.getDimSize(1)}, element),
       RankedTensorType::get({grad.getDimSize(1)}, element)});
  return success();
}

LogicalResult LinearGeluF8Op::verify() {
  Fail<LinearGeluF8Op> fail{getLoc()};
  RankedTensorType lhs = tensorType(getLhs());
  RankedTensorType rhs = tensorType(getRhs());
  if (failed(verifyFp8Operands<LinearGeluF8Op>(getLoc(), lhs, rhs)))
    return failure();
  if (rhs.getRank() != 2)
    return fail("rhs must be a matrix shared by every row of lhs, got ", rhs);
  RankedTensorType result = getResult().getType();
  if (!isa<Float8E4M3FNType, Float8E5M2Type>(result.getElementType()))
    return fail("result must be an f8E4M3FN or f8E5M2 tensor (the GELU's "
                "codes), got ",
                result);
  SmallVector<Type> product;
  if (failed(inferMatmul<LinearGeluF8Op>(getLoc(), lhs, rhs, false,
                                         getTransposeRhs(),
                                         result.getElementType(), product)))
    return failure();
  if (product[0] != result)
    return fail("result must be ", product[0], " (the product's shape), got ",
                result);
  auto bf16 = [&](RankedTensorType t) {
    return t.clone(Builder(getContext()).getBF16Type());
  };
  if (getPre().getType() != bf16(result))
    return fail("pre must be ", bf16(result),
                " (the product's shape, bf16), got ", getPre().getType());
  RankedTensorType bias = tensorType(getBias());
  if (bias != bf16(biasType(result)))
    return fail("bias must be ", bf16(biasType(result)),
                " (one bf16 value per column), got ", bias);
  return success();
}
