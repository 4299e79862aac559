#include "gpu/kv_blocks.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace tf::gpu {

namespace {

std::string gib(size_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
    return text;
}

std::string not_open(int32_t stream) { return "stream " + std::to_string(stream) + " is not open"; }

}  // namespace

KvPlan plan_kv(const KvPlanInput& in) {
    if (in.kv_bytes_per_position == 0) throw std::invalid_argument("plan_kv: kv_bytes_per_position is 0");
    if (!(in.memory_fraction > 0.0 && in.memory_fraction <= 1.0)) {
        throw std::invalid_argument("memory_fraction must be in (0, 1], got " + std::to_string(in.memory_fraction));
    }
    const auto budget = static_cast<size_t>(static_cast<double>(in.device_total_bytes) * in.memory_fraction);
    if (in.weight_bytes >= budget) {
        throw std::runtime_error("the model's weights need " + gib(in.weight_bytes) + " but memory_fraction " +
                                 std::to_string(in.memory_fraction) + " of the device's " + gib(in.device_total_bytes) +
                                 " is " + gib(budget));
    }
    const size_t fixed = in.weight_bytes + in.scratch_bytes;
    const size_t block_bytes = in.kv_bytes_per_position * static_cast<size_t>(kBlockPositions);
    // Room under the fraction, and room that is actually free right now.
    size_t room = budget > fixed ? budget - fixed : 0;
    const size_t free_needed = fixed + in.reserve_bytes;
    room = std::min(room, in.device_free_bytes > free_needed ? in.device_free_bytes - free_needed : size_t{0});
    KvPlan plan;
    plan.blocks = static_cast<int64_t>(room / block_bytes);
    if (in.max_tokens > 0) plan.blocks = std::min<int64_t>(plan.blocks, (in.max_tokens + kBlockPositions - 1) / kBlockPositions);
    if (plan.blocks < 1) {
        throw std::runtime_error("no room for the KV cache: weights " + gib(in.weight_bytes) + " and scratch " +
                                 gib(in.scratch_bytes) + " leave less than one block of " +
                                 std::to_string(kBlockPositions) + " positions (" + gib(block_bytes) + ") of " +
                                 gib(budget) + " (memory_fraction " + std::to_string(in.memory_fraction) + ", " +
                                 gib(in.device_free_bytes) + " free)");
    }
    plan.blocks = std::min<int64_t>(plan.blocks, int64_t{1} << 30);  // block ids are int32
    plan.tokens = plan.blocks * kBlockPositions;
    plan.kv_bytes = static_cast<size_t>(plan.blocks) * block_bytes;
    return plan;
}

KvBlocks::KvBlocks(int64_t total_blocks) : total_blocks_(total_blocks) {
    if (total_blocks < 0 || total_blocks > (int64_t{1} << 30)) {
        throw std::invalid_argument("KvBlocks: bad block count " + std::to_string(total_blocks));
    }
    free_.reserve(static_cast<size_t>(total_blocks));
    for (int64_t b = total_blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
}

KvBlocks::Stream& KvBlocks::get(int32_t stream) {
    auto it = streams_.find(stream);
    if (it == streams_.end()) throw std::invalid_argument(not_open(stream));
    return it->second;
}

const KvBlocks::Stream& KvBlocks::get(int32_t stream) const {
    auto it = streams_.find(stream);
    if (it == streams_.end()) throw std::invalid_argument(not_open(stream));
    return it->second;
}

void KvBlocks::open(int32_t stream, int32_t capacity) {
    if (streams_.count(stream)) throw std::invalid_argument("stream " + std::to_string(stream) + " is already open");
    if (capacity <= 0) throw std::invalid_argument("stream capacity must be positive, got " + std::to_string(capacity));
    if (capacity > total_blocks_ * kBlockPositions) {
        throw std::invalid_argument("stream capacity " + std::to_string(capacity) + " exceeds the KV cache (" +
                                    std::to_string(total_blocks_ * kBlockPositions) + " positions)");
    }
    streams_[stream].capacity = capacity;
}

void KvBlocks::close(int32_t stream) {
    Stream& s = get(stream);
    resize(s, 0);
    streams_.erase(stream);
}

int32_t KvBlocks::length(int32_t stream) const { return get(stream).length; }
int32_t KvBlocks::capacity(int32_t stream) const { return get(stream).capacity; }
const std::vector<int32_t>& KvBlocks::blocks(int32_t stream) const { return get(stream).blocks; }

void KvBlocks::resize(Stream& s, int32_t blocks) {
    while (static_cast<int32_t>(s.blocks.size()) > blocks) {
        free_.push_back(s.blocks.back());
        s.blocks.pop_back();
    }
    while (static_cast<int32_t>(s.blocks.size()) < blocks) {
        if (free_.empty()) throw std::logic_error("KvBlocks::resize: pool empty after a successful check");
        s.blocks.push_back(free_.back());
        free_.pop_back();
    }
}

void KvBlocks::reserve(const std::vector<std::pair<int32_t, int32_t>>& new_lengths) {
    int64_t needed = 0;
    for (const auto& [stream, length] : new_lengths) {
        const Stream& s = get(stream);
        if (length < 0 || length > s.capacity) {
            throw std::invalid_argument("stream " + std::to_string(stream) + " is full (capacity " +
                                        std::to_string(s.capacity) + ")");
        }
        needed += std::max<int64_t>(0, blocks_for(length) - static_cast<int64_t>(s.blocks.size()));
    }
    if (needed > free_blocks()) {
        throw std::runtime_error("KV cache full: this forward needs " + std::to_string(needed) +
                                 " more blocks of " + std::to_string(kBlockPositions) + " positions, " +
                                 std::to_string(free_blocks()) + " of " + std::to_string(total_blocks_) + " are free");
    }
    for (const auto& [stream, length] : new_lengths) {
        Stream& s = get(stream);
        if (blocks_for(length) > static_cast<int32_t>(s.blocks.size())) resize(s, blocks_for(length));
    }
}

void KvBlocks::set_length(int32_t stream, int32_t length) {
    Stream& s = get(stream);
    if (length < 0 || blocks_for(length) > static_cast<int32_t>(s.blocks.size())) {
        throw std::logic_error("KvBlocks::set_length: " + std::to_string(length) + " positions in " +
                               std::to_string(s.blocks.size()) + " blocks");
    }
    s.length = length;
}

void KvBlocks::truncate(int32_t stream, int32_t length) {
    Stream& s = get(stream);
    if (length < 0 || length > s.length) {
        throw std::invalid_argument("truncate stream " + std::to_string(stream) + " to " + std::to_string(length) +
                                    ": it holds " + std::to_string(s.length) + " positions");
    }
    s.length = length;
    resize(s, blocks_for(length));
}

std::vector<std::pair<int32_t, int32_t>> KvBlocks::copy_prefix(int32_t from, int32_t to, int32_t length) {
    const Stream& source = get(from);
    Stream& target = get(to);
    if (from == to || length < 0 || length > source.length || length > target.capacity) {
        throw std::invalid_argument("copy_prefix " + std::to_string(length) + " positions from stream " +
                                    std::to_string(from) + " (length " + std::to_string(source.length) +
                                    ") to stream " + std::to_string(to) + " (capacity " +
                                    std::to_string(target.capacity) + ")");
    }
    const int32_t blocks = blocks_for(length);
    const int64_t needed = std::max<int64_t>(0, blocks - static_cast<int64_t>(target.blocks.size()));
    if (needed > free_blocks()) {
        throw std::runtime_error("KV cache full: copying " + std::to_string(length) + " positions needs " +
                                 std::to_string(needed) + " more blocks, " + std::to_string(free_blocks()) + " of " +
                                 std::to_string(total_blocks_) + " are free");
    }
    resize(target, blocks);
    target.length = length;
    std::vector<std::pair<int32_t, int32_t>> pairs;
    pairs.reserve(static_cast<size_t>(blocks));
    for (int32_t b = 0; b < blocks; ++b) pairs.emplace_back(source.blocks[b], target.blocks[b]);
    return pairs;
}

}  // namespace tf::gpu
