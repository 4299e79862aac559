// The safetensors header parser (model/safetensors.h) reads a file that came
// with a downloaded model: an 8-byte length, a JSON header, then tensor bytes.
// Every malformed file must end in a LoadError, and every tensor it accepts
// must lie inside the mapping (checked by touching its first and last byte,
// which faults when the view points past the file).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz/memory_file.h"
#include "model/load_error.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static tf::fuzz::MemoryFile file("safetensors-fuzz");
    file.fill(data, size);
    try {
        const tf::model::Checkpoint checkpoint = tf::model::Checkpoint::open_file(file.path());
        volatile std::byte sink{};
        for (const auto& [name, view] : checkpoint.tensors()) {
            if (view.bytes == 0) continue;
            sink = view.data[0];
            sink = view.data[view.bytes - 1];
            // require() is what the weight loader calls on every tensor.
            (void)checkpoint.require(name, view.shape);
        }
        (void)sink;
    } catch (const tf::model::LoadError&) {
    }
    return 0;
}
