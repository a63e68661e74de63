//===- Manifest.cpp - the executable's description of itself -------------===//

#include "anvil/runtime/Manifest.h"

#include "anvil/runtime/Json.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

namespace anvil::rt {

namespace {

Status fail(const std::string &where, const std::string &msg) {
  return Status::error(ErrorCode::InvalidArgument,
                       "manifest: " + where + ": " + msg);
}

Expected<const JsonValue *> member(const JsonValue &obj,
                                   const std::string &where, const char *key) {
  const JsonValue *v = obj.get(key);
  if (!v)
    return fail(where, std::string("missing '") + key + "'");
  return v;
}

Expected<BufferRole> parseRole(const std::string &s) {
  if (s == "param")
    return BufferRole::Param;
  if (s == "state")
    return BufferRole::State;
  if (s == "input")
    return BufferRole::Input;
  if (s == "loss")
    return BufferRole::Loss;
  if (s == "metric")
    return BufferRole::Metric;
  return Status::error(ErrorCode::InvalidArgument,
                       "unknown role '" + s +
                           "' (param, state, input, loss, metric)");
}

Expected<InitSpec> parseInit(const JsonValue &v, const std::string &where) {
  if (!v.isObject())
    return fail(where, "expected an object");
  Expected<const JsonValue *> kind = member(v, where, "kind");
  if (!kind)
    return kind.status();
  if (!(*kind)->isString())
    return fail(where + ".kind", "expected a string");
  Expected<InitKind> k = parseInitKind((*kind)->asString());
  if (!k)
    return fail(where + ".kind", k.status().message());
  InitSpec spec;
  spec.kind = *k;
  if (const JsonValue *args = v.get("args")) {
    if (!args->isObject())
      return fail(where + ".args", "expected an object");
    for (const auto &[name, value] : args->members()) {
      if (!value.isNumber())
        return fail(where + ".args." + name, "expected a number");
      spec.args[name] = value.asNumber();
    }
  }
  static const std::map<InitKind, std::set<std::string>> kArgs = {
      {InitKind::Zeros, {}},
      {InitKind::Ones, {}},
      {InitKind::Constant, {"value"}},
      {InitKind::Normal, {"mean", "std"}},
      {InitKind::TruncatedNormal, {"mean", "std", "lower", "upper"}},
      {InitKind::Uniform, {"low", "high"}},
      {InitKind::XavierUniform, {"gain"}},
      {InitKind::XavierNormal, {"gain"}},
      {InitKind::KaimingUniform, {"gain"}},
      {InitKind::KaimingNormal, {"gain"}},
  };
  for (const auto &[name, value] : spec.args)
    if (!kArgs.at(spec.kind).count(name))
      return fail(where + ".args." + name,
                  "not an argument of '" + (*kind)->asString() + "'");
  if (spec.kind == InitKind::TruncatedNormal &&
      !(spec.arg("lower", -2.0) < spec.arg("upper", 2.0)))
    return fail(where + ".args", "truncated_normal needs lower < upper");
  if (const JsonValue *mode = v.get("mode")) {
    if (!mode->isString() ||
        (mode->asString() != "fan_in" && mode->asString() != "fan_out"))
      return fail(where + ".mode", "expected \"fan_in\" or \"fan_out\"");
    spec.fanOut = mode->asString() == "fan_out";
  }
  return spec;
}

} // namespace

Expected<Manifest> Manifest::parse(std::string_view json) {
  Expected<JsonValue> doc = parseJson(json);
  if (!doc)
    return Status::error(ErrorCode::InvalidArgument,
                         "manifest: " + doc.status().message());
  if (!doc->isObject())
    return fail("top level", "expected an object");
  const JsonValue *format = doc->get("format");
  if (!format || !format->isString() || format->asString() != "anvil.manifest")
    return fail("format", "expected \"anvil.manifest\"");
  const JsonValue *version = doc->get("version");
  if (!version || !version->asInteger() || *version->asInteger() != 1)
    return fail("version", "expected 1 (this runtime reads version 1)");

  Manifest m;
  Expected<const JsonValue *> model = member(*doc, "top level", "model");
  if (!model)
    return model.status();
  if (!(*model)->isString() || (*model)->asString().empty())
    return fail("model", "expected a non-empty string");
  m.model = (*model)->asString();
  if (const JsonValue *f = doc->get("flops_per_step")) {
    if (!f->isNumber() || f->asNumber() < 0)
      return fail("flops_per_step", "expected a non-negative number");
    m.flopsPerStep = f->asNumber();
  }
  if (const JsonValue *mesh = doc->get("mesh")) {
    if (!mesh->isObject())
      return fail("mesh", "expected an object of axis: ranks");
    for (const auto &[axis, ranks] : mesh->members()) {
      Expected<int64_t> v = ranks.asInteger();
      if (!v || *v < 1)
        return fail("mesh." + axis, "expected a positive number of ranks");
      m.mesh.emplace_back(axis, *v);
    }
  }
  if (const JsonValue *g = doc->get("step_graph")) {
    const JsonValue *capturable =
        g->isObject() ? g->get("capturable") : nullptr;
    if (!capturable || !capturable->isBool())
      return fail("step_graph.capturable", "expected true or false");
    m.hasStepGraph = true;
    m.stepGraphCapturable = capturable->asBool();
    if (const JsonValue *why = g->get("why")) {
      if (!why->isString())
        return fail("step_graph.why", "expected a string");
      m.stepGraphBlocker = why->asString();
    }
  }
  if (const JsonValue *p = doc->get("planned_bytes")) {
    Expected<int64_t> v = p->asInteger();
    if (!v || *v < 0)
      return fail("planned_bytes", "expected a non-negative integer");
    m.plannedBytes = *v;
  }
  Expected<const JsonValue *> buffers = member(*doc, "top level", "buffers");
  if (!buffers)
    return buffers.status();
  if (!(*buffers)->isArray())
    return fail("buffers", "expected an array");

  std::set<std::string> names;
  for (size_t i = 0; i < (*buffers)->items().size(); ++i) {
    const JsonValue &b = (*buffers)->items()[i];
    std::string where = "buffers[" + std::to_string(i) + "]";
    if (!b.isObject())
      return fail(where, "expected an object");
    BufferInfo info;
    for (const char *key : {"name", "shape", "dtype", "role"})
      if (!b.get(key))
        return fail(where, std::string("missing '") + key + "'");
    if (!b.get("name")->isString() || b.get("name")->asString().empty())
      return fail(where + ".name", "expected a non-empty string");
    info.spec.name = b.get("name")->asString();
    if (!names.insert(info.spec.name).second)
      return fail(where + ".name", "'" + info.spec.name + "' appears twice");
    where += " ('" + info.spec.name + "')";
    if (!b.get("shape")->isArray())
      return fail(where + ".shape", "expected an array");
    const auto &dims = b.get("shape")->items();
    for (size_t d = 0; d < dims.size(); ++d) {
      Expected<int64_t> v = dims[d].asInteger();
      if (!v || *v < 0)
        return fail(where + ".shape[" + std::to_string(d) + "]",
                    "expected a non-negative integer");
      info.spec.shape.push_back(*v);
    }
    if (!b.get("dtype")->isString())
      return fail(where + ".dtype", "expected a string");
    Expected<DType> dt = parseDType(b.get("dtype")->asString());
    if (!dt)
      return fail(where + ".dtype", dt.status().message());
    info.spec.dtype = *dt;
    if (!b.get("role")->isString())
      return fail(where + ".role", "expected a string");
    Expected<BufferRole> role = parseRole(b.get("role")->asString());
    if (!role)
      return fail(where + ".role", role.status().message());
    info.role = *role;
    bool isState =
        info.role == BufferRole::Param || info.role == BufferRole::State;
    if (const JsonValue *index = b.get("index")) {
      Expected<int64_t> v = index->asInteger();
      if (!v || *v < 0)
        return fail(where + ".index", "expected a non-negative integer");
      info.index = *v;
    } else if (isState) {
      return fail(where, "state needs 'index' (its @train_step argument)");
    }
    if (const JsonValue *init = b.get("init")) {
      Expected<InitSpec> spec = parseInit(*init, where + ".init");
      if (!spec)
        return spec.status();
      info.init = *spec;
    } else if (isState) {
      return fail(where, "state needs 'init'");
    }
    for (auto [key, field] : {std::pair{"result", &info.result},
                              std::pair{"eval_index", &info.evalIndex},
                              std::pair{"range", &info.range}}) {
      const JsonValue *v = b.get(key);
      if (!v)
        continue;
      Expected<int64_t> n = v->asInteger();
      if (!n || *n < 0)
        return fail(where + "." + key, "expected a non-negative integer");
      *field = *n;
    }
    if (const JsonValue *v = b.get("ignore")) {
      Expected<int64_t> n = v->asInteger();
      if (!n)
        return fail(where + ".ignore", "expected an integer");
      info.ignore = *n;
    }
    if (const JsonValue *sh = b.get("sharding")) {
      std::string at = where + ".sharding";
      const JsonValue *shape =
          sh->isObject() ? sh->get("global_shape") : nullptr;
      const JsonValue *flat = sh->isObject() ? sh->get("flat_axis") : nullptr;
      const JsonValue *split = sh->isObject() ? sh->get("split_axis") : nullptr;
      if (!shape || !shape->isArray() || (!flat && !split) ||
          (flat && !flat->isString()) || (split && !split->isString()))
        return fail(at, "expected {\"global_shape\": [...], \"flat_axis\": "
                        "\"<mesh axis>\"}, {\"global_shape\": [...], "
                        "\"split_axis\": \"<mesh axis>\", \"split_dim\": d, "
                        "\"split_groups\": g} or both");
      Sharding sharding;
      for (const JsonValue &d : shape->items()) {
        Expected<int64_t> v = d.asInteger();
        if (!v || *v < 0)
          return fail(at + ".global_shape", "expected non-negative integers");
        sharding.globalShape.push_back(*v);
      }
      if (!numElements(sharding.globalShape))
        return fail(at + ".global_shape", "too many elements");
      for (auto [key, axis, field] :
           {std::tuple{"split_axis", split, &sharding.splitAxis},
            std::tuple{"flat_axis", flat, &sharding.flatAxis}}) {
        if (!axis)
          continue;
        *field = axis->asString();
        bool known = false;
        for (const auto &entry : m.mesh)
          known |= entry.first == *field;
        if (!known)
          return fail(at + "." + key,
                      "'" + *field + "' is not an axis of the mesh");
      }
      // The tensor-parallel part, then ZeRO's block of it.
      std::vector<int64_t> local = sharding.globalShape;
      if (split) {
        int64_t n = m.meshAxis(sharding.splitAxis);
        for (auto [key, field] :
             {std::pair{"split_dim", &sharding.dim},
              std::pair{"split_groups", &sharding.groups}}) {
          const JsonValue *v = sh->get(key);
          Expected<int64_t> k = v ? v->asInteger()
                                  : Expected<int64_t>(Status::error(
                                        ErrorCode::InvalidArgument, "missing"));
          if (!k)
            return fail(at + "." + key, "expected an integer");
          *field = *k;
        }
        int64_t rank = static_cast<int64_t>(local.size());
        if (sharding.dim < 0 || sharding.dim >= rank || sharding.groups < 1 ||
            local[static_cast<size_t>(sharding.dim)] % (sharding.groups * n) !=
                0)
          return fail(at, "dimension " + std::to_string(sharding.dim) + " of " +
                              formatShape(sharding.globalShape) +
                              " does not split into " +
                              std::to_string(sharding.groups) + " groups of " +
                              std::to_string(n) + " parts");
        local[static_cast<size_t>(sharding.dim)] /= n;
      }
      if (flat) {
        int64_t n = m.meshAxis(sharding.flatAxis);
        int64_t part = *numElements(local);
        local = {(part + n - 1) / n};
      }
      if (info.spec.shape != local)
        return fail(at, "the part of " + formatShape(sharding.globalShape) +
                            " a rank holds has shape " + formatShape(local) +
                            ", the buffer " + formatShape(info.spec.shape));
      info.sharding = std::move(sharding);
    }
    m.buffers.push_back(std::move(info));
  }

  // The entry points' arities, and that every position they imply is
  // named by exactly one buffer.
  auto entry = [&](const JsonValue &v, const std::string &where,
                   bool resultList) -> Expected<EntryInfo> {
    if (!v.isObject())
      return fail(where, "expected an object");
    EntryInfo e;
    Expected<int64_t> args =
        v.get("args") ? v.get("args")->asInteger()
                      : Expected<int64_t>(fail(where, "missing 'args'"));
    if (!args || *args < 0)
      return fail(where + ".args", "expected a non-negative integer");
    e.args = *args;
    const JsonValue *results = v.get("results");
    if (!results)
      return fail(where, "missing 'results'");
    if (resultList) {
      if (!results->isArray())
        return fail(where + ".results", "expected an array");
      e.results = static_cast<int64_t>(results->items().size());
      return e;
    }
    Expected<int64_t> n = results->asInteger();
    if (!n || *n < 0)
      return fail(where + ".results", "expected a non-negative integer");
    e.results = *n;
    return e;
  };
  if (const JsonValue *train = doc->get("train_step");
      train && !train->isNull()) {
    Expected<EntryInfo> e = entry(*train, "train_step", false);
    if (!e)
      return e.status();
    m.trainStep = *e;
  }
  const JsonValue *eval = doc->get("eval_step");
  if (!eval)
    return fail("top level", "missing 'eval_step'");
  Expected<EntryInfo> e = entry(*eval, "eval_step", true);
  if (!e)
    return e.status();
  m.evalStep = *e;
  const auto &results = eval->get("results")->items();
  for (size_t r = 0; r < results.size(); ++r) {
    std::string where = "eval_step.results[" + std::to_string(r) + "]";
    TensorSpec spec;
    spec.name = "result" + std::to_string(r);
    const JsonValue *shape = results[r].get("shape");
    const JsonValue *dtype = results[r].get("dtype");
    if (!shape || !shape->isArray() || !dtype || !dtype->isString())
      return fail(where, "expected {\"shape\": [...], \"dtype\": \"...\"}");
    for (const JsonValue &d : shape->items()) {
      Expected<int64_t> v = d.asInteger();
      if (!v || *v < 0)
        return fail(where + ".shape", "expected non-negative integers");
      spec.shape.push_back(*v);
    }
    Expected<DType> dt = parseDType(dtype->asString());
    if (!dt)
      return fail(where + ".dtype", dt.status().message());
    spec.dtype = *dt;
    m.evalResults.push_back(std::move(spec));
  }
  std::set<int64_t> trainArgs, trainResults, evalArgs;
  for (const BufferInfo &b : m.buffers) {
    std::string where = "buffer '" + b.spec.name + "'";
    bool isResult = b.role == BufferRole::Loss || b.role == BufferRole::Metric;
    if (m.trainStep) {
      int64_t limit = isResult ? m.trainStep->results : m.trainStep->args;
      if (b.index >= limit ||
          !(isResult ? trainResults : trainArgs).insert(b.index).second)
        return fail(where, "index " + std::to_string(b.index) +
                               " is out of range or taken twice");
      if (b.result && (*b.result >= m.trainStep->results ||
                       !trainResults.insert(*b.result).second))
        return fail(where, "result " + std::to_string(*b.result) +
                               " is out of range or taken twice");
    }
    if (b.evalIndex && (*b.evalIndex >= m.evalStep.args ||
                        !evalArgs.insert(*b.evalIndex).second))
      return fail(where, "eval_index " + std::to_string(*b.evalIndex) +
                             " is out of range or taken twice");
  }
  if (m.trainStep &&
      (static_cast<int64_t>(trainArgs.size()) != m.trainStep->args))
    return fail("train_step", "not every argument is named by a buffer");
  if (static_cast<int64_t>(evalArgs.size()) != m.evalStep.args)
    return fail("eval_step", "not every argument is named by a buffer");
  return m;
}

const BufferInfo *Manifest::find(const std::string &name) const {
  for (const BufferInfo &b : buffers)
    if (b.spec.name == name)
      return &b;
  return nullptr;
}

TensorSpec BufferInfo::globalSpec() const {
  if (!sharding)
    return spec;
  return TensorSpec{spec.name, spec.dtype, sharding->globalShape};
}

PieceLayout
BufferInfo::layout(const std::vector<std::pair<std::string, int64_t>> &mesh,
                   std::span<const int64_t> coordinates) const {
  PieceLayout l = PieceLayout::whole(globalSpec().shape);
  if (!sharding)
    return l;
  auto place = [&](const std::string &axis) {
    for (size_t a = 0; a < mesh.size() && a < coordinates.size(); ++a)
      if (mesh[a].first == axis)
        return std::pair{coordinates[a], mesh[a].second};
    return std::pair<int64_t, int64_t>{0, 1};
  };
  if (!sharding->splitAxis.empty()) {
    auto [position, ranks] = place(sharding->splitAxis);
    l.kind = PieceLayout::Kind::Split;
    l.dim = sharding->dim;
    l.groups = sharding->groups;
    l.parts = ranks;
    l.index = position;
  }
  if (!sharding->flatAxis.empty()) {
    // Block `position` of the part, clipped to it (the padding is not
    // part of any tensor).
    auto [position, ranks] = place(sharding->flatAxis);
    int64_t n = l.elements();
    int64_t block = spec.shape.empty() ? 1 : spec.shape[0];
    l.begin = std::min(n, position * block);
    l.end = std::min(n, l.begin + block);
    if (l.kind == PieceLayout::Kind::Whole)
      l.kind = PieceLayout::Kind::Flat;
    else
      l.blockOfPart = true;
  }
  return l;
}

std::vector<TensorSpec> Manifest::stateSpecs() const {
  std::vector<TensorSpec> specs;
  for (const BufferInfo &b : buffers)
    if (b.role == BufferRole::Param || b.role == BufferRole::State)
      specs.push_back(b.globalSpec());
  return specs;
}

std::string Manifest::fingerprint() const {
  // FNV-1a over "name:dtype:shape;" of every state buffer.
  uint64_t h = 0xcbf29ce484222325ull;
  auto feed = [&](std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 0x100000001b3ull;
    }
  };
  for (const TensorSpec &s : stateSpecs()) {
    feed(s.name);
    feed(":");
    feed(dtypeName(s.dtype));
    feed(formatShape(s.shape));
    feed(";");
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return model + ":" + hex;
}

} // namespace anvil::rt
