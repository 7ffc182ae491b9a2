// The model every engine subcommand runs when --model is not given: the small trained Llama that
// ships in configs/default-model (see its README.md).
#pragma once

#include <filesystem>

namespace weft {

// The first of these that holds a config.json:
//   $WEFT_DEFAULT_MODEL;
//   <directory of the weft binary>/../share/weft/default-model (an installed weft);
//   <source tree>/configs/default-model (a build tree; the path is fixed at compile time).
// Empty when none does.
std::filesystem::path default_model_dir();

}  // namespace weft
