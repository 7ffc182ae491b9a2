// Private to kernels/cpu: how the float GEMM tiles of linear() walk the activation rows of one
// task (a block of weight rows sized for L2, run_linear_tiles). Include after the file's target
// pragma.
#pragma once

#include <cstdint>
#include <utility>

namespace weft::kernels::cpu {

// Calls row_tile.template operator()<MR, kFetchNext>(i) for the rows [i0, i1): tiles of kRows
// rows, then one tile of the rows left (MR < kRows). The first tile reads the task's weight
// block from memory and fetches the next weight tile's rows as it goes (kFetchNext); the later
// ones find the block in L2 and fetch nothing. (Only batch 1 fetched until Dec 2026; fetching in
// every row tile made prefill about 10% slower.)
template <int kRows, class RowTile>
void for_each_row_tile(int64_t i0, int64_t i1, const RowTile& row_tile) {
  int64_t i = i0;
  if (i1 - i0 >= kRows) {
    row_tile.template operator()<kRows, true>(i);
    for (i += kRows; i + kRows <= i1; i += kRows) row_tile.template operator()<kRows, false>(i);
  }
  const int64_t rest = i1 - i;
  const bool first = i == i0;
  [&]<int... R>(std::integer_sequence<int, R...>) {
    const auto tail = [&]<int MR>() {
      if (rest != MR) return;
      first ? row_tile.template operator()<MR, true>(i) : row_tile.template operator()<MR, false>(i);
    };
    (tail.template operator()<R + 1>(), ...);
  }(std::make_integer_sequence<int, kRows - 1>());
}

}  // namespace weft::kernels::cpu
