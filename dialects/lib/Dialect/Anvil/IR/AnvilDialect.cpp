//===- AnvilDialect.cpp - the anvil dialect -------------------------------===//
//
// Registers the ops and attributes, materializes folded constants, and
// checks the `anvil.param` / `anvil.input` argument attributes of forward
// functions: right attribute kind, one role per argument, unique names, and
// initializers that fit the parameter's type.
//
//===----------------------------------------------------------------------===//

#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::anvil;

#include "anvil/Dialect/Anvil/IR/AnvilDialect.cpp.inc"
#include "anvil/Dialect/Anvil/IR/AnvilEnums.cpp.inc"

void AnvilDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "anvil/Dialect/Anvil/IR/AnvilOps.cpp.inc"
      >();
  registerAttributes();
}

Operation *AnvilDialect::materializeConstant(OpBuilder &builder,
                                             Attribute value, Type type,
                                             Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}

/// The name an argument carries as a parameter, state or input, if any.
static std::optional<StringRef> getArgName(FunctionOpInterface fn,
                                           unsigned index) {
  if (auto p =
          fn.getArgAttrOfType<ParamAttr>(index, AnvilDialect::kParamAttrName))
    return p.getName();
  if (auto s =
          fn.getArgAttrOfType<StateAttr>(index, AnvilDialect::kStateAttrName))
    return s.getName();
  if (auto i =
          fn.getArgAttrOfType<InputAttr>(index, AnvilDialect::kInputAttrName))
    return i.getName();
  return std::nullopt;
}

/// `anvil.sharding` on argument `argIndex` of `fn`: which part of a whole
/// tensor the argument is, or (without `global_shape`, on a whole tensor)
/// how a partitioner is to split it.
static LogicalResult verifySharding(FunctionOpInterface fn, unsigned argIndex,
                                    Attribute value) {
  if (!fn)
    return failure();
  auto error = [&]() {
    return mlir::emitError(fn.isExternal() ? fn->getLoc()
                                           : fn.getArgument(argIndex).getLoc())
           << "argument #" << argIndex << ": '"
           << AnvilDialect::kShardingAttrName << "' ";
  };
  auto dict = dyn_cast<DictionaryAttr>(value);
  auto shape = dict ? dict.getAs<DenseI64ArrayAttr>("global_shape")
                    : DenseI64ArrayAttr();
  auto flat = dict ? dict.getAs<StringAttr>("flat_axis") : StringAttr();
  auto split = dict ? dict.getAs<StringAttr>("split_axis") : StringAttr();
  auto dim = dict ? dict.getAs<IntegerAttr>("split_dim") : IntegerAttr();
  auto groups = dict ? dict.getAs<IntegerAttr>("split_groups") : IntegerAttr();
  // A tensor-parallel part (split_*), ZeRO's flat block (flat_axis), or
  // ZeRO's block of a tensor-parallel part (both); a partitioner's
  // instruction has split_* alone, without the whole shape.
  bool hasSplit = split && dim && groups && groups.getInt() >= 1;
  size_t keys = (shape ? 1 : 0) + (flat ? 1 : 0) + (hasSplit ? 3 : 0);
  bool wellFormed = dict && keys == dict.size() && (hasSplit || flat) &&
                    (shape || (hasSplit && !flat));
  if (!wellFormed)
    return error() << "must be {global_shape = array<i64: ...>, flat_axis = "
                      "\"<mesh axis>\"}, {[global_shape = array<i64: ...>, "
                      "]split_axis = \"<mesh axis>\", split_dim = d, "
                      "split_groups = g} or both, got "
                   << value;
  auto type = dyn_cast<RankedTensorType>(fn.getArgumentTypes()[argIndex]);
  if (!type)
    return error() << "needs a ranked tensor argument";
  if (!shape) {
    // A partitioner's instruction on the whole tensor.
    if (dim.getInt() < 0 || dim.getInt() >= type.getRank())
      return error() << "splits dimension " << dim.getInt() << " of " << type;
    return success();
  }
  for (StringAttr axis : {split, flat})
    if (axis && meshAxisSize(fn, axis.getValue()) < 0)
      return error() << "names axis '" << axis.getValue()
                     << "', which the module's mesh does not have";
  // The tensor-parallel part, then ZeRO's block of it.
  SmallVector<int64_t> local(shape.asArrayRef());
  if (hasSplit) {
    int64_t ranks = meshAxisSize(fn, split.getValue());
    if (dim.getInt() < 0 ||
        dim.getInt() >= static_cast<int64_t>(local.size()) ||
        local[dim.getInt()] % (ranks * groups.getInt()) != 0)
      return error() << "cannot split dimension " << dim.getInt() << " of ["
                     << shape.asArrayRef() << "] into " << groups.getInt()
                     << " groups of " << ranks << " parts";
    local[dim.getInt()] /= ranks;
  }
  if (flat) {
    int64_t ranks = meshAxisSize(fn, flat.getValue());
    int64_t part = 1;
    for (int64_t d : local)
      part *= d;
    local = {(part + ranks - 1) / ranks};
  }
  if (type.getShape() != ArrayRef<int64_t>(local))
    return error() << "needs a tensor of shape [" << local << "] (its part of ["
                   << shape.asArrayRef() << "]), got " << type;
  return success();
}

LogicalResult AnvilDialect::verifyRegionArgAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned argIndex,
                                                     NamedAttribute attr) {
  auto fn = dyn_cast<FunctionOpInterface>(op);
  StringRef attrName = attr.getName().getValue();
  if (attrName == kShardingAttrName)
    return verifySharding(fn, argIndex, attr.getValue());
  bool isParam = attrName == kParamAttrName;
  bool isState = attrName == kStateAttrName;
  if (!isParam && !isState && attrName != kInputAttrName)
    return op->emitError() << "argument #" << argIndex
                           << " has unknown attribute '" << attrName
                           << "'; anvil defines '" << kParamAttrName << "', '"
                           << kStateAttrName << "' and '" << kInputAttrName
                           << "'";
  if (!fn || regionIndex != 0)
    return op->emitError() << "'" << attrName
                           << "' is only allowed on function arguments";
  // Point at the argument itself when the function has a body.
  Location loc =
      fn.isExternal() ? op->getLoc() : fn.getArgument(argIndex).getLoc();
  auto error = [&]() {
    return mlir::emitError(loc) << "argument #" << argIndex << ": ";
  };
  bool rightKind = isParam   ? isa<ParamAttr>(attr.getValue())
                   : isState ? isa<StateAttr>(attr.getValue())
                             : isa<InputAttr>(attr.getValue());
  if (!rightKind)
    return error() << "'" << attrName << "' must be a #" << attrName
                   << "<...> attribute, got " << attr.getValue();
  int roles = 0;
  for (StringRef role : {kParamAttrName, kStateAttrName, kInputAttrName})
    roles += fn.getArgAttr(argIndex, role) ? 1 : 0;
  if (roles > 1)
    return error() << "has more than one of '" << kParamAttrName << "', '"
                   << kStateAttrName << "' and '" << kInputAttrName << "'";

  StringRef name = *getArgName(fn, argIndex);
  for (unsigned j = 0; j < argIndex; ++j)
    if (getArgName(fn, j) == name)
      return error() << "name '" << name << "' is already used by argument #"
                     << j;

  if (!isParam)
    return success();
  auto type = dyn_cast<RankedTensorType>(fn.getArgumentTypes()[argIndex]);
  auto param = cast<ParamAttr>(attr.getValue());
  // Buffers may also count (batch norm's num_batches_tracked is an i64).
  bool elementOk =
      type &&
      (isa<FloatType>(type.getElementType()) ||
       (param.getBuffer() && type.getElementType().isSignlessInteger()));
  if (!type || !type.hasStaticShape() || !elementOk)
    return error() << "parameter '" << name << "' must be a statically shaped "
                   << (param.getBuffer() ? "float or integer" : "float")
                   << " tensor, got " << fn.getArgumentTypes()[argIndex];
  InitKind kind = param.getInit().getKind();
  bool needsFans =
      kind == InitKind::xavier_uniform || kind == InitKind::xavier_normal ||
      kind == InitKind::kaiming_uniform || kind == InitKind::kaiming_normal;
  if (needsFans && type.getRank() < 2)
    return error() << "parameter '" << name << "' of type " << type
                   << " has no fan-in/fan-out for the '"
                   << stringifyInitKind(kind)
                   << "' initializer (it needs rank 2 or more)";
  return success();
}

LogicalResult AnvilDialect::verifyRegionResultAttribute(Operation *op,
                                                        unsigned regionIndex,
                                                        unsigned resultIndex,
                                                        NamedAttribute attr) {
  if (attr.getName() == kGradAttrName) {
    if (isa<StringAttr>(attr.getValue()))
      return success();
    return op->emitError() << "result #" << resultIndex << ": '"
                           << kGradAttrName
                           << "' must be the name of an argument, got "
                           << attr.getValue();
  }
  if (attr.getName() == kTiedAttrName) {
    auto fn = dyn_cast<FunctionOpInterface>(op);
    auto index = dyn_cast<IntegerAttr>(attr.getValue());
    if (fn && index && index.getInt() >= 0 &&
        index.getInt() < static_cast<int64_t>(fn.getNumArguments()) &&
        fn.getArgumentTypes()[index.getInt()] ==
            fn.getResultTypes()[resultIndex])
      return success();
    return op->emitError() << "result #" << resultIndex << ": '"
                           << kTiedAttrName
                           << "' must be the index of an argument of the "
                              "result's type, got "
                           << attr.getValue();
  }
  if (attr.getName() == kMetricAttrName) {
    auto fn = dyn_cast<FunctionOpInterface>(op);
    auto name = dyn_cast<StringAttr>(attr.getValue());
    auto type =
        fn ? dyn_cast<RankedTensorType>(fn.getResultTypes()[resultIndex])
           : RankedTensorType();
    if (name && !name.getValue().empty() && type && type.getRank() == 0)
      return success();
    return op->emitError() << "result #" << resultIndex << ": '"
                           << kMetricAttrName
                           << "' must name a scalar (rank-0) result, got "
                           << attr.getValue();
  }
  return op->emitError() << "result #" << resultIndex
                         << " has unknown attribute '"
                         << attr.getName().getValue() << "'; anvil defines '"
                         << kGradAttrName << "', '" << kMetricAttrName
                         << "' and '" << kTiedAttrName << "'";
}

LogicalResult AnvilDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  // The device mesh of a sharded program: axis name -> ranks.
  if (attr.getName() == kMeshAttrName) {
    auto mesh = dyn_cast<DictionaryAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !mesh)
      return op->emitError()
             << "'" << kMeshAttrName << "' must be a dictionary on a module";
    for (NamedAttribute axis : mesh) {
      auto size = dyn_cast<IntegerAttr>(axis.getValue());
      if (!size || size.getInt() < 1)
        return op->emitError()
               << "'" << kMeshAttrName << "': axis '"
               << axis.getName().getValue()
               << "' needs a positive number of ranks, got " << axis.getValue();
    }
    return success();
  }
  // A GEMM that runs in FP8, and its recipe.
  if (attr.getName() == kFP8AttrName) {
    if (!isa<MatmulOp>(op) || !isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'" << kFP8AttrName
                             << "' must be a recipe name on an anvil.matmul";
    return success();
  }
  // Which partitioner made a tensor-parallel function.
  if (attr.getName() == kPartitionerAttrName) {
    auto name = dyn_cast<StringAttr>(attr.getValue());
    if (!isa<FunctionOpInterface>(op) || !name ||
        (name.getValue() != "shard" && name.getValue() != "anvil"))
      return op->emitError()
             << "'" << kPartitionerAttrName
             << "' must be \"shard\" or \"anvil\" on a function";
    return success();
  }
  // Whether a CUDA graph can replay a function (anvil-cuda-step-graph).
  if (attr.getName() == kGraphCapturableAttrName) {
    if (!isa<FunctionOpInterface>(op) || !isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'" << kGraphCapturableAttrName
                             << "' must be a unit attribute on a function";
    return success();
  }
  if (attr.getName() == kGraphBlockerAttrName) {
    if (!isa<FunctionOpInterface>(op) || !isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'" << kGraphBlockerAttrName
                             << "' must be a string on a function";
    return success();
  }
  // A sum a broadcast's VJP made (anvil-gemm-epilogues).
  if (attr.getName() == kBroadcastGradAttrName) {
    if (!isa<ReduceSumOp>(op) || !isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'" << kBroadcastGradAttrName
                             << "' must be a unit attribute on an "
                                "anvil.reduce_sum";
    return success();
  }
  // A convolution a library runs (anvil-library-convs), an embedding
  // gradient the runtime computes (anvil-convert-to-linalg
  // library-embedding-grads).
  if (attr.getName() == kLibraryCallAttrName) {
    if (!isa<ConvOp, ConvTransposeOp, ConvFilterGradOp, EmbeddingGradOp>(op) ||
        !isa<UnitAttr>(attr.getValue()))
      return op->emitError()
             << "'" << kLibraryCallAttrName
             << "' must be a unit attribute on an anvil.conv, "
                "anvil.conv_transpose, anvil.conv_filter_grad or "
                "anvil.embedding_grad";
    return success();
  }
  if (attr.getName() == kRowGroupAttrName) {
    if (!(isa<FunctionOpInterface>(op) ||
          op->getName().getStringRef() == "scf.execute_region") ||
        !isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'" << kRowGroupAttrName
                             << "' must be a unit attribute on a function "
                                "or an scf.execute_region";
    return success();
  }
  return op->emitError() << "unknown anvil attribute '"
                         << attr.getName().getValue() << "' on an op";
}
