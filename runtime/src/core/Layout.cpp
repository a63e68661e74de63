//===- Layout.cpp - where a rank's piece of a tensor lies in the whole ----===//

#include "anvil/runtime/Layout.h"

#include "anvil/runtime/DType.h"

#include <algorithm>
#include <cstring>

namespace anvil::rt {

PieceLayout PieceLayout::whole(std::vector<int64_t> shape) {
  PieceLayout l;
  l.shape = std::move(shape);
  return l;
}

int64_t PieceLayout::wholeElements() const {
  Expected<int64_t> n = numElements(shape);
  return n ? *n : 0;
}

int64_t PieceLayout::elements() const {
  switch (kind) {
  case Kind::Whole:
    return wholeElements();
  case Kind::Flat:
    return end - begin;
  case Kind::Split:
    return blockOfPart ? end - begin : wholeElements() / parts;
  }
  return 0;
}

void PieceLayout::forEachRun(
    const std::function<void(int64_t, int64_t, int64_t)> &fn) const {
  switch (kind) {
  case Kind::Whole:
    fn(0, 0, wholeElements());
    return;
  case Kind::Flat:
    fn(begin, 0, end - begin);
    return;
  case Kind::Split: {
    // outer x [groups x (parts x block)] x inner, row-major.
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
      if (d < dim)
        outer *= shape[static_cast<size_t>(d)];
      if (d > dim)
        inner *= shape[static_cast<size_t>(d)];
    }
    int64_t block = shape[static_cast<size_t>(dim)] / groups / parts;
    int64_t run = block * inner, at = 0;
    // The part's runs; a block of the part keeps their overlap with
    // [begin, end), renumbered from 0.
    int64_t lo = blockOfPart ? begin : 0;
    int64_t hi = blockOfPart ? end : outer * groups * run;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t g = 0; g < groups; ++g) {
        int64_t first = ((o * groups + g) * parts + index) * run;
        int64_t from = std::max(at, lo), to = std::min(at + run, hi);
        if (from < to)
          fn(first + (from - at), from - lo, to - from);
        at += run;
      }
    return;
  }
  }
}

void PieceLayout::extract(std::span<const std::byte> whole,
                          std::span<std::byte> piece,
                          size_t elementSize) const {
  forEachRun([&](int64_t from, int64_t to, int64_t n) {
    std::memcpy(piece.data() + static_cast<size_t>(to) * elementSize,
                whole.data() + static_cast<size_t>(from) * elementSize,
                static_cast<size_t>(n) * elementSize);
  });
}

void PieceLayout::insert(std::span<const std::byte> piece,
                         std::span<std::byte> whole, size_t elementSize) const {
  forEachRun([&](int64_t to, int64_t from, int64_t n) {
    std::memcpy(whole.data() + static_cast<size_t>(to) * elementSize,
                piece.data() + static_cast<size_t>(from) * elementSize,
                static_cast<size_t>(n) * elementSize);
  });
}

JsonValue PieceLayout::toJson() const {
  JsonValue o = JsonValue::object();
  if (kind == Kind::Whole)
    return o;
  JsonValue dims = JsonValue::array();
  for (int64_t d : shape)
    dims.push(JsonValue::number(static_cast<double>(d)));
  o.set("shape", std::move(dims));
  auto num = [](int64_t v) {
    return JsonValue::number(static_cast<double>(v));
  };
  if (kind == Kind::Flat) {
    o.set("begin", num(begin));
    o.set("end", num(end));
    return o;
  }
  if (blockOfPart) {
    o.set("begin", num(begin));
    o.set("end", num(end));
  }
  JsonValue s = JsonValue::object();
  s.set("dim", num(dim));
  s.set("groups", num(groups));
  s.set("parts", num(parts));
  s.set("index", num(index));
  o.set("split", std::move(s));
  return o;
}

Expected<PieceLayout> PieceLayout::fromJson(const JsonValue &json,
                                            int64_t pieceElements) {
  auto bad = [&](const std::string &why) {
    return Status::error(ErrorCode::InvalidArgument,
                         "piece layout " + json.dump() + ": " + why);
  };
  if (!json.isObject())
    return bad("expected an object");
  PieceLayout l;
  const JsonValue *shape = json.get("shape");
  if (!shape || !shape->isArray())
    return bad("expected \"shape\": [...]");
  for (const JsonValue &d : shape->items()) {
    Expected<int64_t> v = d.asInteger();
    if (!v || *v < 0)
      return bad("the shape must be non-negative integers");
    l.shape.push_back(*v);
  }
  if (!numElements(l.shape))
    return bad("the shape is too large");
  auto integer = [&](const JsonValue *v, int64_t &out) {
    if (!v || !v->asInteger())
      return false;
    out = *v->asInteger();
    return true;
  };
  if (const JsonValue *s = json.get("split")) {
    l.kind = Kind::Split;
    if (!s->isObject() || !integer(s->get("dim"), l.dim) ||
        !integer(s->get("groups"), l.groups) ||
        !integer(s->get("parts"), l.parts) ||
        !integer(s->get("index"), l.index))
      return bad("\"split\" needs integers dim, groups, parts and index");
    if (l.dim < 0 || l.dim >= static_cast<int64_t>(l.shape.size()) ||
        l.groups < 1 || l.parts < 1 || l.index < 0 || l.index >= l.parts ||
        l.shape[static_cast<size_t>(l.dim)] % (l.groups * l.parts) != 0)
      return bad("the split does not divide the shape");
    if (json.get("begin") || json.get("end")) {
      l.blockOfPart = true;
      int64_t part = l.wholeElements() / l.parts;
      if (!integer(json.get("begin"), l.begin) ||
          !integer(json.get("end"), l.end) || l.begin < 0 || l.end < l.begin ||
          l.end > part)
        return bad("expected \"begin\" and \"end\" within the part");
    }
  } else {
    l.kind = Kind::Flat;
    if (!integer(json.get("begin"), l.begin) ||
        !integer(json.get("end"), l.end) || l.begin < 0 || l.end < l.begin ||
        l.end > l.wholeElements())
      return bad("expected \"begin\" and \"end\" within the shape");
  }
  if (l.elements() != pieceElements)
    return bad("it holds " + std::to_string(l.elements()) +
               " elements, the piece " + std::to_string(pieceElements));
  return l;
}

} // namespace anvil::rt
