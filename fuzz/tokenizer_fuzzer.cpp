// The tokenizer loader and encoder: a model directory's tokenizer.json is
// input nobody here wrote, and so is every prompt. The harness is the one
// tests/tokenizer/fuzz_test.cpp drives with its own mutations (fuzz_one.h).
// The first input byte picks the mode: load the rest as tokenizer.json, or
// encode the rest with tinycode's tokenizer.
#include <cstdlib>

#include "tests/tokenizer/fuzz/fuzz_one.h"

namespace {

const tf::tokenizer::Tokenizer& tinycode() {
    static const tf::tokenizer::Tokenizer loaded = tf::tokenizer::Tokenizer::load(TF_FUZZ_SOURCE_DIR "/models/tinycode");
    return loaded;
}

}  // namespace

// Loading tinycode's tokenizer.json takes seconds under ASan and coverage;
// done here, before libFuzzer starts its per-input timer, it no longer reads
// as a hang of the first input that encodes.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
    tinycode();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace tf::tokenizer;
    if (size == 0) return 0;
    const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
    fuzz::Outcome outcome;
    if (data[0] % 2 == 0) {
        outcome = fuzz::load_and_exercise(rest, data[0]);
    } else {
        outcome = fuzz::exercise(tinycode(), rest, data[0]);
    }
    if (!outcome.ok) std::abort();
    return 0;
}
