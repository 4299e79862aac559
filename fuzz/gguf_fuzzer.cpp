// The GGUF reader (model/gguf.h) takes a file a user downloaded: a header of
// counts, keys and tensor records, then tensor bytes. Every malformed file
// must end in a LoadError; every tensor it accepts must lie inside the
// mapping (its first and last byte are touched, which faults when the view
// points past the file); and every accessor must answer or throw LoadError,
// whatever type the key turned out to hold.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "fuzz/memory_file.h"
#include "model/gguf.h"
#include "model/load_error.h"

namespace {

// Calls one accessor; a LoadError is a fine answer for a key of another type.
template <class F>
void ask(F&& read) {
    try {
        read();
    } catch (const tf::model::LoadError&) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static tf::fuzz::MemoryFile file("gguf-fuzz");
    file.fill(data, size);
    try {
        const tf::model::GgufFile gguf = tf::model::GgufFile::parse(std::make_shared<tf::model::MappedFile>(file.path()));
        volatile std::byte sink{};
        for (const tf::model::GgufTensor& t : gguf.tensors()) {
            if (t.bytes == 0) continue;
            sink = t.data[0];
            sink = t.data[t.bytes - 1];
        }
        (void)sink;
        for (const auto& entry : gguf.metadata()) {
            const std::string& key = entry.first;  // clang 14 cannot capture a structured binding
            ask([&] { (void)gguf.string(key); });
            ask([&] { (void)gguf.unsigned_int(key); });
            ask([&] { (void)gguf.number(key); });
            ask([&] { (void)gguf.boolean(key); });
            ask([&] { (void)gguf.strings(key).size(); });
            ask([&] { (void)gguf.ints(key).size(); });
            ask([&] { (void)gguf.reals(key).size(); });
        }
        (void)gguf.find_tensor("token_embd.weight");
    } catch (const tf::model::LoadError&) {
    }
    return 0;
}
