// The safetensors header parser (model/safetensors.h) reads a file that came
// with a downloaded model: an 8-byte length, a JSON header, then tensor bytes.
// Every malformed file must end in a LoadError, and every tensor it accepts
// must lie inside the mapping (checked by touching its first and last byte,
// which faults when the view points past the file).
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "model/load_error.h"
#include "model/safetensors.h"

namespace {

// Checkpoint opens files by path, so the input goes into an anonymous memory
// file reached through /proc: no disk writes, nothing left behind on a crash.
class MemoryFile {
public:
    MemoryFile() : fd_(::memfd_create("safetensors-fuzz", MFD_CLOEXEC)) {
        if (fd_ < 0) std::abort();
        path_ = "/proc/self/fd/" + std::to_string(fd_);
    }
    void fill(const uint8_t* data, size_t size) {
        if (::ftruncate(fd_, 0) != 0) std::abort();
        size_t done = 0;
        while (done < size) {
            const ssize_t n = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
            if (n <= 0) std::abort();
            done += static_cast<size_t>(n);
        }
    }
    const std::string& path() const { return path_; }

private:
    int fd_;
    std::string path_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static MemoryFile file;
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
