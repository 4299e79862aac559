// The tokenizer loader and encoder: a model directory's tokenizer.json is
// input nobody here wrote, and so is every prompt. The harness is the one
// tests/tokenizer/fuzz_test.cpp drives with its own mutations (fuzz_one.h).
// The first input byte picks the mode: load the rest as tokenizer.json, or
// encode the rest with tinycode's tokenizer.
#include <cstdlib>

#include "tests/tokenizer/fuzz/fuzz_one.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace tf::tokenizer;
    if (size == 0) return 0;
    const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
    fuzz::Outcome outcome;
    if (data[0] % 2 == 0) {
        outcome = fuzz::load_and_exercise(rest, data[0]);
    } else {
        static const Tokenizer tinycode = Tokenizer::load(TF_FUZZ_SOURCE_DIR "/models/tinycode");
        outcome = fuzz::exercise(tinycode, rest, data[0]);
    }
    if (!outcome.ok) std::abort();
    return 0;
}
