//===- AnvilInterfaces.td - interfaces of anvil ops ------------*- tablegen -*-===//
//
// Op interfaces through which passes reach every anvil op without a switch
// over op names. This file holds the cost interface; the VJP and sharding
// rules join it with the passes that use them.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_DIALECT_ANVIL_IR_ANVILINTERFACES_TD
#define ANVIL_DIALECT_ANVIL_IR_ANVILINTERFACES_TD

include "mlir/IR/OpBase.td"

def Anvil_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::mlir::anvil";
  let description = [{
    The static cost of one execution of an op: the floating-point (or
    integer) operations it performs and the minimal bytes it must move.

    FLOPs count a multiply-add as two. Elementwise ops cost a nominal number
    of FLOPs per result element (declared with the op); contractions
    (matmul, convolution, attention) cost what the textbook formulas say.
    Bytes are those of a standalone kernel: every operand read once and every
    result written once, at the storage size of the element type (i1 and the
    8-bit floats take one byte). Ops that read only part of an operand
    (slice, gather, the embeddings) count only the elements they read.
  }];
  let methods = [
    InterfaceMethod<
      /*desc=*/"FLOPs of one execution of this op.",
      /*retTy=*/"int64_t", /*methodName=*/"getFlops", /*args=*/(ins),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::mlir::anvil::getNumElements($_op->getResult(0).getType()) *
               ConcreteOp::kFlopsPerElement;
      }]>,
    InterfaceMethod<
      /*desc=*/"Minimal bytes moved: operands read once, results written once.",
      /*retTy=*/"int64_t", /*methodName=*/"getBytesMoved", /*args=*/(ins),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::mlir::anvil::getOperandAndResultBytes($_op);
      }]>,
  ];
}

#endif // ANVIL_DIALECT_ANVIL_IR_ANVILINTERFACES_TD
