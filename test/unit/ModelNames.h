//===- ModelNames.h - the parameter names of a built model (tests) -*- C++
//-*-===//
//
// Shared by the model tests: the names of a forward function's parameters
// (and buffers), in argument order, which is the state-dict order.
//
//===----------------------------------------------------------------------===//

#ifndef ANVIL_TEST_UNIT_MODELNAMES_H
#define ANVIL_TEST_UNIT_MODELNAMES_H

#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include <string>
#include <vector>

namespace anvil::test {

/// The `anvil.param` names of the module's first function, in order.
inline std::vector<std::string> parameterNames(mlir::ModuleOp module) {
  auto fn = *module.getOps<mlir::FunctionOpInterface>().begin();
  std::vector<std::string> names;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (auto p = fn.getArgAttrOfType<mlir::anvil::ParamAttr>(
            i, mlir::anvil::AnvilDialect::kParamAttrName))
      names.push_back(p.getName().str());
  return names;
}

} // namespace anvil::test

#endif // ANVIL_TEST_UNIT_MODELNAMES_H
