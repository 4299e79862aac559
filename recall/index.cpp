#include "recall/index.h"

// Inlined so that the hash of a fixed 64-byte window compiles to straight-line
// code (same XXH3-64 algorithm as the library).
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstring>

#include "recall/chunk_file.h"

namespace tf::recall {

Index::Index(uint32_t chunk_ids, uint64_t key_table_bytes)
    : chunk_ids_(chunk_ids),
      shift_(static_cast<uint32_t>(std::countr_zero(chunk_ids))),
      key_table_entries_(key_table_bytes / sizeof(uint32_t)) {
    assert(std::has_single_bit(chunk_ids));
    assert(std::has_single_bit(key_table_entries_) && key_table_entries_ >= 2);
    bucket_shift_ = 64 - static_cast<uint32_t>(std::countr_zero(key_table_entries_));
    // Allocated once, at open (its size is fixed by --recall-gib), and zeroed:
    // 0 names no position (clear()).
    key_table_ = std::make_unique_for_overwrite<uint32_t[]>(key_table_entries_);
    std::fill_n(key_table_.get(), key_table_entries_, 0);
}

uint64_t Index::key_table_bytes_for(uint64_t recall_bytes) {
    return std::max<uint64_t>(256, std::bit_floor(recall_bytes / 8));
}

uint64_t Index::oldest_sequence() const {
    assert(!empty());
    return front_sequence_;
}

uint64_t Index::newest_sequence() const {
    assert(!empty());
    return slots_.back()->sequence;
}

uint32_t Index::newest_size() const {
    assert(!empty());
    return slots_.back()->size;
}

uint32_t Index::last_id() const {
    if (empty() || slots_.back()->size == 0) return kSeparator;
    const Chunk& c = *slots_.back();
    return c.ids[c.size - 1];
}

const Index::Chunk* Index::chunk_by_sequence(uint64_t sequence) const {
    if (sequence < front_sequence_ || sequence - front_sequence_ >= slots_.size()) return nullptr;
    return slots_[sequence - front_sequence_].get();
}

const Index::Chunk* Index::chunk_at(uint64_t position) const { return chunk_by_sequence(position >> shift_); }

bool Index::live(uint64_t position) const {
    const Chunk* c = chunk_at(position);
    return c && (position & (chunk_ids_ - 1)) < c->size;
}

uint32_t Index::id_at(uint64_t position) const { return chunk_at(position)->ids[position & (chunk_ids_ - 1)]; }

uint64_t Index::newest_position() const {
    const Chunk& c = *slots_.back();
    return (c.sequence << shift_) + c.size - 1;
}

size_t Index::bucket_of(const uint32_t* window) const {
    return static_cast<size_t>(XXH3_64bits(window, kKeyIds * sizeof(uint32_t)) >> bucket_shift_);
}

uint64_t Index::head_position(size_t bucket) const {
    if (empty() || slots_.back()->size == 0) return 0;
    const uint64_t newest = newest_position();
    const uint32_t back = static_cast<uint32_t>(newest) - key_table_[bucket];  // modulo 2^32
    if (back > newest) return 0;
    const uint64_t position = newest - back;
    return live(position) ? position : 0;
}

uint64_t Index::previous_in_chain(uint64_t position) const {
    const uint32_t back = chunk_at(position)->links[position & (chunk_ids_ - 1)];
    if (back == 0 || back > position) return 0;
    const uint64_t previous = position - back;
    return live(previous) ? previous : 0;
}

const uint32_t* Index::window_at(uint64_t position, uint32_t* out) const {
    const uint32_t offset = static_cast<uint32_t>(position & (chunk_ids_ - 1));
    if (offset + 1 >= kKeyIds) return chunk_at(position)->ids.get() + offset + 1 - kKeyIds;
    for (uint32_t i = 0; i < kKeyIds; ++i) out[i] = id_at(position + 1 - kKeyIds + i);
    return out;
}

void Index::begin_chunk(uint64_t sequence) {
    if (!empty()) {
        const Chunk& newest = *slots_.back();
        assert(sequence > newest.sequence);
        // Windows are only indexed over contiguous positions.
        if (sequence != newest.sequence + 1 || newest.size != chunk_ids_) run_ = 0;
        while (front_sequence_ + slots_.size() < sequence) slots_.push_back(nullptr);
    } else {
        slots_.clear();
        front_sequence_ = sequence;
        run_ = 0;
    }
    auto chunk = std::make_unique<Chunk>();
    chunk->sequence = sequence;
    // A chunk costs its full 8 MiB from the moment it is opened (docs/recall.md,
    // "Sizing"): both arrays are allocated whole, now; pages fill as ids arrive.
    chunk->ids = std::make_unique_for_overwrite<uint32_t[]>(chunk_ids_);
    chunk->links = std::make_unique_for_overwrite<uint32_t[]>(chunk_ids_);
    slots_.push_back(std::move(chunk));
    ++chunk_count_;
}

void Index::append(const uint32_t* ids, uint64_t n) {
    assert(!empty());
    Chunk& c = *slots_.back();
    assert(c.size + n <= chunk_ids_);
    // Hashes of a block are computed and their buckets prefetched before any
    // is inserted: the key table is far larger than the caches.
    constexpr uint32_t kBlock = 32;
    size_t buckets[kBlock];
    uint64_t positions[kBlock];
    uint32_t window[kKeyIds];
    uint64_t done = 0;
    while (done < n) {
        const uint64_t block = std::min<uint64_t>(kBlock, n - done);
        uint32_t pending = 0;
        for (uint64_t i = 0; i < block; ++i) {
            const uint32_t id = ids[done + i];
            const uint32_t offset = c.size;
            c.ids[offset] = id;
            c.links[offset] = 0;
            ++c.size;
            ++ids_;
            if (id == kSeparator) {
                ++c.separators;
                ++separators_;
                run_ = 0;
                continue;
            }
            if (run_ < kKeyIds) ++run_;
            if (run_ < kKeyIds) continue;
            const uint64_t position = (c.sequence << shift_) + offset;
            const uint32_t* ids_window =
                offset + 1 >= kKeyIds ? c.ids.get() + offset + 1 - kKeyIds : window_at(position, window);
            buckets[pending] = bucket_of(ids_window);
            __builtin_prefetch(&key_table_[buckets[pending]], 1);
            positions[pending] = position;
            ++pending;
        }
        // The link is the distance back to the bucket's previous head,
        // from low bits alone (modulo 2^32); whether that position is still
        // live is checked when a lookup follows the link. 0 ends a chain.
        for (uint32_t i = 0; i < pending; ++i) {
            const uint32_t low = static_cast<uint32_t>(positions[i]);
            c.links[positions[i] & (chunk_ids_ - 1)] = low - key_table_[buckets[i]];
            key_table_[buckets[i]] = low;
        }
        done += block;
    }
}

void Index::evict_oldest() {
    assert(!empty());
    const Chunk& oldest = *slots_.front();
    ids_ -= oldest.size;
    separators_ -= oldest.separators;
    slots_.pop_front();
    ++front_sequence_;
    --chunk_count_;
    while (!slots_.empty() && !slots_.front()) {
        slots_.pop_front();
        ++front_sequence_;
    }
    if (slots_.empty()) run_ = 0;
}

void Index::clear() {
    slots_.clear();
    chunk_count_ = 0;
    ids_ = 0;
    separators_ = 0;
    run_ = 0;
    // Any value is safe (heads are checked for liveness); 0 never names a
    // position while sequence numbers stay below 2^32 / chunk_ids.
    std::fill_n(key_table_.get(), key_table_entries_, 0);
}

size_t Index::match_backward(uint64_t position, const uint32_t* q, size_t n) const {
    const Chunk* c = chunk_at(position);
    if (!c) return 0;
    int64_t offset = static_cast<int64_t>(position & (chunk_ids_ - 1));
    if (offset >= c->size) return 0;
    size_t k = 0;
    while (true) {
        const uint32_t* ids = c->ids.get();
        for (; offset >= 0 && k < n; --offset, ++k) {
            const uint32_t v = ids[offset];
            if (v == kSeparator || v != q[n - 1 - k]) return k;
        }
        if (k == n) return k;
        const Chunk* previous = chunk_by_sequence(c->sequence - 1);
        if (!previous || previous->size != chunk_ids_) return k;  // evicted, or a gap: a boundary
        c = previous;
        offset = chunk_ids_ - 1;
    }
}

size_t Index::match_forward(uint64_t position, const uint32_t* q, size_t n) const {
    const Chunk* c = chunk_at(position);
    if (!c) return 0;
    uint32_t offset = static_cast<uint32_t>(position & (chunk_ids_ - 1));
    size_t k = 0;
    while (k < n) {
        const uint32_t* ids = c->ids.get();
        for (; offset < c->size && k < n; ++offset, ++k) {
            const uint32_t v = ids[offset];
            if (v == kSeparator || v != q[k]) return k;
        }
        if (k == n || c->size != chunk_ids_) return k;
        c = chunk_by_sequence(c->sequence + 1);
        if (!c) return k;
        offset = 0;
    }
    return k;
}

Match Index::lookup(std::span<const uint32_t> tail, uint32_t max_len) const {
    Match match;
    const size_t n = tail.size();
    if (n < kKeyIds || max_len == 0 || empty()) return match;
    const uint32_t* window = tail.data() + n - kKeyIds;
    if (std::find(window, window + kKeyIds, kSeparator) != window + kKeyIds) return match;

    uint64_t best = 0;
    size_t best_length = 0;
    uint64_t candidate = head_position(bucket_of(window));
    for (uint32_t step = 0; candidate != 0 && step < kMaxChainSteps; ++step) {
        const size_t length = match_backward(candidate, tail.data(), n);
        // Strictly longer only: the chain runs most recent first, so the
        // most recent of equally long matches is kept.
        if (length >= kKeyIds && length > best_length && live(candidate + 1) && id_at(candidate + 1) != kSeparator) {
            best = candidate;
            best_length = length;
            if (length == n) break;  // nothing earlier can be longer
        }
        candidate = previous_in_chain(candidate);
    }
    if (best_length == 0) return match;
    match.length = static_cast<uint32_t>(best_length);
    match.continuation.reserve(std::min<uint32_t>(max_len, 256));
    for (uint64_t position = best + 1; match.continuation.size() < max_len && live(position); ++position) {
        const uint32_t id = id_at(position);
        if (id == kSeparator) break;
        match.continuation.push_back(id);
    }
    return match;
}

HeldRun Index::longest_held_run(std::span<const uint32_t> run, size_t window_end, size_t lo) const {
    HeldRun best{window_end + 1, window_end + 1};
    if (empty() || window_end + 1 < lo + kKeyIds || window_end >= run.size()) return best;
    const uint32_t* window = run.data() + window_end + 1 - kKeyIds;
    uint64_t candidate = head_position(bucket_of(window));
    const size_t back_limit = window_end + 1 - lo;
    const size_t forward_limit = run.size() - window_end - 1;
    for (uint32_t step = 0; candidate != 0 && step < kMaxChainSteps; ++step) {
        const size_t back = match_backward(candidate, run.data() + lo, back_limit);
        if (back >= kKeyIds) {
            const size_t forward = match_forward(candidate + 1, run.data() + window_end + 1, forward_limit);
            if (back + forward > best.length()) {
                best = HeldRun{window_end + 1 - back, window_end + 1 + forward};
                if (back == back_limit && forward == forward_limit) break;
            }
        }
        candidate = previous_in_chain(candidate);
    }
    return best;
}

}  // namespace tf::recall
