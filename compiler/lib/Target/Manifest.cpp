//===- Manifest.cpp - the manifest a training executable embeds -----------===//
//
// 1. Walk the training step's arguments: `anvil.param` and `anvil.state`
//    are training state (with their initializer; the step updates them in
//    place), the rest are batch inputs (`anvil.input` names them, else
//    `arg<i>`).
// 2. Its untied results are what the lowered function returns: the loss
//    (the first) and metrics (named by `anvil.metric`, else `metric<i>`).
// 3. The eval function's arguments are matched to those buffers by name
//    (`eval_index`), and its results become `eval_results`.
// 4. FLOPs per step are the cost interface's sum over the training step.
//
//===----------------------------------------------------------------------===//

#include "anvil/Target/Manifest.h"

#include "anvil/Dialect/Anvil/IR/AnvilDialect.h"
#include "anvil/Dialect/Anvil/IR/AnvilOps.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::anvil;
namespace json = llvm::json;

namespace {

/// The runtime's dtype name of `type`, or failure.
FailureOr<StringRef> dtypeName(Type type) {
  if (type.isF64())
    return StringRef("f64");
  if (type.isF32())
    return StringRef("f32");
  if (type.isF16())
    return StringRef("f16");
  if (type.isBF16())
    return StringRef("bf16");
  if (type.isSignlessInteger(64))
    return StringRef("i64");
  if (type.isSignlessInteger(32))
    return StringRef("i32");
  if (type.isSignlessInteger(1))
    return StringRef("i1");
  return failure();
}

json::Object initJson(InitializerAttr init) {
  json::Object o{{"kind", stringifyInitKind(init.getKind()).str()}};
  json::Object args;
  for (NamedAttribute arg : init.getArgs()) {
    if (auto f = dyn_cast<FloatAttr>(arg.getValue()))
      args[arg.getName().str()] = f.getValueAsDouble();
    else if (auto s = dyn_cast<StringAttr>(arg.getValue()))
      o[arg.getName().str()] = s.getValue().str(); // "mode"
  }
  if (!args.empty())
    o["args"] = std::move(args);
  return o;
}

/// A buffer's common fields; fails (with a diagnostic on `fn`) on a type
/// the runtime cannot hold.
FailureOr<json::Object> bufferJson(FunctionOpInterface fn, Type type,
                                   StringRef name, StringRef role,
                                   int64_t index) {
  auto t = dyn_cast<RankedTensorType>(type);
  FailureOr<StringRef> dtype =
      t ? dtypeName(t.getElementType()) : FailureOr<StringRef>(failure());
  if (!t || !t.hasStaticShape() || failed(dtype))
    return fn->emitError("anvil manifest: buffer '")
           << name << "' of @" << fn.getName() << " has type " << type
           << "; executables hold statically shaped tensors of f64, f32, "
              "f16, bf16, i64, i32 or i1";
  json::Array shape;
  for (int64_t d : t.getShape())
    shape.push_back(d);
  // json::Value keeps a StringRef without copying: own the strings.
  return json::Object{{"name", name.str()},
                      {"shape", std::move(shape)},
                      {"dtype", *dtype},
                      {"role", role},
                      {"index", index}};
}

/// The values an input may take, [0, range): the range its #anvil.input
/// states, else, for an integer argument the function uses as embedding
/// indices (the table's rows) or class labels (the logits' last dimension),
/// the range that use implies. The runtime draws synthetic data from it.
std::optional<int64_t> indexRange(FunctionOpInterface fn, unsigned i) {
  if (auto in = fn.getArgAttrOfType<InputAttr>(i, AnvilDialect::kInputAttrName);
      in && in.getRange())
    return in.getRange();
  std::optional<int64_t> range;
  for (Operation *user : fn.getArgument(i).getUsers()) {
    if (auto e = dyn_cast<EmbeddingOp>(user);
        e && e.getIndices() == fn.getArgument(i))
      range = e.getTable().getType().getDimSize(0);
    if (auto e = dyn_cast<EmbeddingBagOp>(user);
        e && e.getIndices() == fn.getArgument(i))
      range = e.getTable().getType().getDimSize(0);
    if (auto ce = dyn_cast<CrossEntropyOp>(user);
        ce && ce.getLabels() == fn.getArgument(i)) {
      auto t = ce.getLogits().getType();
      range = t.getDimSize(t.getRank() - 1);
    }
  }
  return range;
}

/// The ignore_index of the cross-entropy an integer argument is the labels
/// of, when it lies outside the classes (a label that may appear in data).
std::optional<int64_t> ignoredLabel(FunctionOpInterface fn, unsigned i) {
  for (Operation *user : fn.getArgument(i).getUsers())
    if (auto ce = dyn_cast<CrossEntropyOp>(user);
        ce && ce.getLabels() == fn.getArgument(i)) {
      int64_t classes = ce.getLogits().getType().getShape().back();
      int64_t ignore = ce.getIgnoreIndex();
      if (ignore < 0 || ignore >= classes)
        return ignore;
    }
  return std::nullopt;
}

int64_t stepFlops(FunctionOpInterface fn) {
  int64_t flops = 0;
  fn->walk([&](CostOpInterface op) { flops += op.getFlops(); });
  return flops;
}

} // namespace

FailureOr<ModuleABI> mlir::anvil::buildModuleABI(FunctionOpInterface train,
                                                 FunctionOpInterface eval,
                                                 StringRef model,
                                                 int64_t plannedBytes) {
  json::Array buffers;
  llvm::StringMap<size_t> byName; // buffer name -> position in `buffers`
  auto add = [&](json::Object o) -> LogicalResult {
    std::string name = o.getString("name")->str();
    if (!byName.try_emplace(name, buffers.size()).second)
      return failure();
    buffers.push_back(std::move(o));
    return success();
  };
  auto argName = [](FunctionOpInterface fn, unsigned i) -> std::string {
    if (auto p =
            fn.getArgAttrOfType<ParamAttr>(i, AnvilDialect::kParamAttrName))
      return p.getName().str();
    if (auto s =
            fn.getArgAttrOfType<StateAttr>(i, AnvilDialect::kStateAttrName))
      return s.getName().str();
    if (auto in =
            fn.getArgAttrOfType<InputAttr>(i, AnvilDialect::kInputAttrName))
      return in.getName().str();
    return "arg" + std::to_string(i);
  };
  auto duplicate = [](FunctionOpInterface fn, StringRef name) {
    return fn->emitError("anvil manifest: two buffers of @")
           << fn.getName() << " are named '" << name << "'";
  };

  ModuleABI abi;
  FunctionOpInterface main = train ? train : eval;
  // 1-2. The step's arguments and results.
  for (unsigned i = 0, e = main.getNumArguments(); i < e; ++i) {
    std::string name = argName(main, i);
    InitializerAttr init;
    StringRef role = "input";
    if (auto p =
            main.getArgAttrOfType<ParamAttr>(i, AnvilDialect::kParamAttrName)) {
      role = "param";
      init = p.getInit();
    } else if (auto s = main.getArgAttrOfType<StateAttr>(
                   i, AnvilDialect::kStateAttrName)) {
      role = "state";
      init = s.getInit();
    }
    FailureOr<json::Object> o =
        bufferJson(main, main.getArgumentTypes()[i], name, role, i);
    if (failed(o))
      return failure();
    if (init)
      (*o)["init"] = initJson(init);
    if (auto p =
            main.getArgAttrOfType<ParamAttr>(i, AnvilDialect::kParamAttrName);
        p && p.getBuffer())
      (*o)["buffer"] = true;
    // A part of a whole tensor (a partitioner's instruction without a
    // global_shape was never carried out: the buffer is whole).
    if (auto sharding = main.getArgAttrOfType<DictionaryAttr>(
            i, AnvilDialect::kShardingAttrName);
        sharding && sharding.get("global_shape")) {
      json::Array shape;
      for (int64_t d :
           sharding.getAs<DenseI64ArrayAttr>("global_shape").asArrayRef())
        shape.push_back(d);
      json::Object part{{"global_shape", std::move(shape)}};
      if (auto split = sharding.getAs<StringAttr>("split_axis")) {
        part["split_axis"] = split.getValue().str();
        part["split_dim"] = sharding.getAs<IntegerAttr>("split_dim").getInt();
        part["split_groups"] =
            sharding.getAs<IntegerAttr>("split_groups").getInt();
      }
      if (auto flat = sharding.getAs<StringAttr>("flat_axis"))
        part["flat_axis"] = flat.getValue().str();
      (*o)["sharding"] = std::move(part);
    }
    if (std::optional<int64_t> range = indexRange(main, i)) {
      (*o)["range"] = *range;
      if (std::optional<int64_t> ignore = ignoredLabel(main, i))
        (*o)["ignore"] = *ignore;
    }
    // State with a tied result is updated in place (anvil-bufferize
    // drops those results), so it has no "result" of its own.
    if (!train) {
      (*o)["eval_index"] = static_cast<int64_t>(i);
    }
    if (failed(add(std::move(*o))))
      return duplicate(main, name);
  }
  // The untied results, numbered as the lowered function returns them.
  int64_t untied = 0;
  for (unsigned r = 0, e = main.getNumResults(); r < e; ++r) {
    if (main.getResultAttr(r, AnvilDialect::kTiedAttrName))
      continue;
    int64_t position = untied++;
    std::string name = r == 0 ? "loss" : "metric" + std::to_string(r);
    if (auto m = main.getResultAttrOfType<StringAttr>(
            r, AnvilDialect::kMetricAttrName))
      name = m.getValue().str();
    FailureOr<json::Object> o =
        bufferJson(main, main.getResultTypes()[r], name,
                   position == 0 ? "loss" : "metric", position);
    if (failed(o))
      return failure();
    if (failed(add(std::move(*o))))
      return duplicate(main, name);
  }
  abi.entries.push_back(
      {main.getName().str(), train ? "train_step" : "eval_step",
       main.getNumArguments(), static_cast<unsigned>(untied)});

  // 3. The eval function reads the step's buffers by name.
  json::Array evalResults;
  if (train && eval) {
    for (unsigned i = 0, e = eval.getNumArguments(); i < e; ++i) {
      std::string name = argName(eval, i);
      auto it = byName.find(name);
      if (it == byName.end())
        return eval->emitError("anvil manifest: argument '")
               << name << "' of @" << eval.getName() << " is not a buffer of @"
               << main.getName();
      (*buffers[it->second].getAsObject())["eval_index"] =
          static_cast<int64_t>(i);
    }
    abi.entries.push_back({eval.getName().str(), "eval_step",
                           eval.getNumArguments(), eval.getNumResults()});
  }
  if (auto fn = train && eval ? eval : main) {
    for (unsigned r = 0, e = fn.getNumResults(); r < e; ++r) {
      FailureOr<StringRef> dtype = failure();
      auto t = dyn_cast<RankedTensorType>(fn.getResultTypes()[r]);
      if (t)
        dtype = dtypeName(t.getElementType());
      if (failed(dtype))
        return fn->emitError("anvil manifest: result #")
               << r << " of @" << fn.getName() << " has an unsupported type";
      json::Array shape;
      for (int64_t d : t.getShape())
        shape.push_back(d);
      evalResults.push_back(
          json::Object{{"shape", std::move(shape)}, {"dtype", *dtype}});
    }
  }

  json::Object doc{
      {"format", "anvil.manifest"},
      {"version", 1},
      {"model", model.str()},
      {"flops_per_step", static_cast<double>(stepFlops(main))},
      {"planned_bytes", plannedBytes},
      {"train_step",
       train ? json::Value(json::Object{{"args", train.getNumArguments()},
                                        {"results", untied}})
             : json::Value(nullptr)},
      {"eval_step",
       json::Object{{"args", (train && eval ? eval : main).getNumArguments()},
                    {"results", std::move(evalResults)}}},
      {"buffers", std::move(buffers)}};
  // The device mesh of a sharded program: the runtime checks the world
  // the launcher started against it.
  if (auto module = main->getParentOfType<ModuleOp>())
    if (auto mesh = module->getAttrOfType<DictionaryAttr>(
            AnvilDialect::kMeshAttrName)) {
      json::Object axes;
      for (NamedAttribute axis : mesh)
        axes[axis.getName().str()] =
            cast<IntegerAttr>(axis.getValue()).getInt();
      doc["mesh"] = std::move(axes);
    }
  llvm::raw_string_ostream os(abi.manifest);
  os << json::Value(std::move(doc));
  return abi;
}

namespace {
/// Sets member `key` of the manifest's top level to `value`.
void setManifestField(ModuleABI &abi, StringRef key, json::Value value) {
  llvm::Expected<json::Value> doc = json::parse(abi.manifest);
  if (!doc) {
    llvm::consumeError(doc.takeError());
    return;
  }
  (*doc->getAsObject())[key] = std::move(value);
  abi.manifest.clear();
  llvm::raw_string_ostream os(abi.manifest);
  os << *doc;
}
} // namespace

void mlir::anvil::setPlannedBytes(ModuleABI &abi, int64_t bytes) {
  setManifestField(abi, "planned_bytes", bytes);
}

void mlir::anvil::setStepGraph(ModuleABI &abi, StringRef blocker) {
  json::Object graph{{"capturable", blocker.empty()}};
  if (!blocker.empty())
    graph["why"] = blocker.str();
  setManifestField(abi, "step_graph", std::move(graph));
}
