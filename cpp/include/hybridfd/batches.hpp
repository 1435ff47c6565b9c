// Batches: how many grids travel in one message (GPAW journal, Sect. 5.1.2). A batch of
// b grids sends one message per neighbour with all b grids' faces; sloped batching starts
// with smaller batches so the first computation can start sooner.
#pragma once

#include <string>
#include <string_view>

namespace hybridfd {

enum class SlopeKind {
  geometric,  // the papers': b/2^n, b/2^(n-1), ..., b/2, then b
  linear,     // GPAW's chunk increment: b/(n+1), 2b/(n+1), ..., n*b/(n+1), then b
};

std::string_view slope_kind_name(SlopeKind kind);
// Throws ValueError naming the kind and listing the known ones.
SlopeKind slope_kind_from_name(std::string_view name);

struct BatchShape {
  int batch = 1;  // b: grids per message once the slope is over
  int slope = 0;  // n: number of smaller batches before the first full one
  SlopeKind kind = SlopeKind::geometric;

  // Throws ValueError naming the value: batch < 1, slope < 0, or a slope whose first
  // batch would hold less than one grid.
  void validate() const;
  // Grids in batch number `index` (0-based) of an unbounded sequence; the caller clips
  // the last batch to the grids left.
  int size(int index) const;
};

}  // namespace hybridfd
