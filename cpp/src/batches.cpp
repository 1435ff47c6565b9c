#include "hybridfd/batches.hpp"

#include "format.hpp"
#include "hybridfd/errors.hpp"

namespace hybridfd {

std::string_view slope_kind_name(SlopeKind kind) { return kind == SlopeKind::linear ? "linear" : "geometric"; }

SlopeKind slope_kind_from_name(std::string_view name) {
  if (name == "geometric") return SlopeKind::geometric;
  if (name == "linear") return SlopeKind::linear;
  throw ValueError(detail::concat("unknown slope kind '", name, "'; known: geometric, linear"));
}

namespace {

// The largest slope whose first batch still holds one grid.
int largest_slope(int batch, SlopeKind kind) {
  if (kind == SlopeKind::linear) return batch - 1;
  int slope = 0;
  while ((batch >> (slope + 1)) >= 1) ++slope;
  return slope;
}

}  // namespace

void BatchShape::validate() const {
  if (batch < 1) throw ValueError(detail::concat("batch ", batch, " must be at least 1"));
  if (slope < 0) throw ValueError(detail::concat("slope ", slope, " must be 0 (no slope) or more"));
  if (slope > largest_slope(batch, kind))
    throw ValueError(detail::concat("slope ", slope, " (", slope_kind_name(kind), ") with batch ", batch,
                                    " makes the first batch smaller than one grid; the largest such slope is ",
                                    largest_slope(batch, kind)));
}

int BatchShape::size(int index) const {
  if (index >= slope) return batch;
  if (kind == SlopeKind::geometric) return batch >> (slope - index);
  return static_cast<int>(static_cast<long long>(batch) * (index + 1) / (slope + 1));
}

}  // namespace hybridfd
