// Index: the record's ids in memory, the key table and the hash chains that
// find earlier occurrences of a stream's last ids.
//
// Memory cost: a chunk allocates its full 8 MiB as soon as it receives one
// id, however few it ends up holding, and on top comes one key table whose
// size depends only on --recall-gib (docs/recall.md, "Sizing").
//
// Layout.
//  - Every id has a global position g = (chunk sequence << log2(chunk_ids)) +
//    offset in its chunk. Positions only grow; an evicted chunk takes its
//    positions with it, and a position is live iff its chunk is in memory and
//    the offset is below the chunk's size.
//  - Per chunk, allocated when its first id arrives: `ids` (chunk_ids uint32,
//    4 MiB) and `links` (chunk_ids uint32, 4 MiB): 8 MiB, whatever its fill.
//  - One key table of key_table_bytes / 4 uint32 heads (a power of two),
//    allocated once: recall bytes / 8, rounded down to a power of two.
//  - Key of position g: xxHash3-64 of the 16 ids ending at g (ids g-15..g), for
//    windows that contain no separator. Its bucket is the hash's top bits.
//  - head[bucket] holds the low 32 bits of the most recent position whose key
//    fell in that bucket; the full position is the latest position at or
//    before the newest id with those low bits. links[g] holds g minus the
//    previous position of the same bucket, modulo 2^32 (0 ends the chain).
//    Each bucket is thus a chain, most recent first. Adding a key is two
//    stores; liveness is checked only when a lookup follows a link.
//
// No stale hits: a chain is followed only while its positions are live, and
// every candidate is verified by comparing ids, so an evicted chunk is never
// read and a hash collision or a head whose low bits alias a live position
// can cost a chain step but never produce a wrong match. (Records over 2^32
// ids, 16 GiB, can miss matches older than 2^32 ids through such aliasing.)
//
// Lookup walks at most kMaxChainSteps chain entries, most recent first, and
// extends every verified candidate backwards to measure the match; it keeps
// the longest (most recent on ties) and stops early at a match as long as the
// tail it was given. Each step is about two cache misses, so the bound keeps
// a lookup within ~20 µs even on a full chain (docs/performance.md).
//
// Not thread-safe: Record serialises writers against readers. The const
// member functions touch nothing mutable and may run concurrently.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

namespace tf::recall {

// A match found by lookup: `length` ids of the stream's tail (16 or more)
// equal earlier record ids; `continuation` holds the ids that followed them.
// length 0: no match.
struct Match {
    uint32_t length = 0;
    std::vector<uint32_t> continuation;
};

// A run of an incoming span that the record already holds: [begin, end).
struct HeldRun {
    size_t begin = 0;
    size_t end = 0;
    size_t length() const { return end - begin; }
};

class Index {
   public:
    static constexpr uint32_t kKeyIds = 16;         // seed: "the stream's last 16 tokens or more"
    static constexpr uint32_t kMaxChainSteps = 64;  // chain entries one lookup may visit

    // chunk_ids: a power of two (kChunkIds outside tests).
    Index(uint32_t chunk_ids, uint64_t key_table_bytes);

    // recall bytes / 8 rounded down to a power of two, at least 256 bytes:
    // 8 MiB for the default 64 MiB record.
    static uint64_t key_table_bytes_for(uint64_t recall_bytes);

    uint32_t chunk_ids() const { return chunk_ids_; }
    uint64_t chunk_memory_bytes() const { return uint64_t{8} * chunk_ids_; }  // ids + links
    uint64_t key_table_bytes() const { return key_table_entries_ * sizeof(uint32_t); }
    // Exactly what is allocated: 8 MiB per chunk in memory plus the key table.
    uint64_t memory_bytes() const { return chunk_count_ * chunk_memory_bytes() + key_table_bytes(); }

    size_t chunk_count() const { return chunk_count_; }
    uint64_t ids() const { return ids_; }                // every stored value, separators included
    uint64_t separators() const { return separators_; }  // of which separators
    bool empty() const { return chunk_count_ == 0; }
    uint64_t oldest_sequence() const;  // requires !empty()
    uint64_t newest_sequence() const;  // requires !empty()
    uint32_t newest_size() const;      // ids in the newest chunk; requires !empty()
    // The value of the newest stored id (kSeparator when empty): a new run
    // needs a separator before it unless this already is one.
    uint32_t last_id() const;

    // Starts chunk `sequence` (greater than every chunk held) and allocates
    // its 8 MiB. A gap in sequence numbers, or a previous chunk that is not
    // full, is a segment boundary.
    void begin_chunk(uint64_t sequence);
    // Appends n ids to the newest chunk (they must fit) and indexes every
    // window of 16 ids without a separator that now ends in them.
    void append(const uint32_t* ids, uint64_t n);
    // Frees the oldest chunk; its positions stop being live.
    void evict_oldest();
    // Frees every chunk and empties the key table.
    void clear();

    // The longest earlier match of `tail`'s last ids (16 or more, measured up
    // to tail.size()) that has a continuation, most recent on ties, and up to
    // max_len ids of that continuation (stopping at a segment boundary).
    Match lookup(std::span<const uint32_t> tail, uint32_t max_len) const;

    // The longest run of `run` around the 16-id window ending at
    // run[window_end] that the record holds contiguously, reaching back no
    // further than run[lo]; empty when the window is not held.
    HeldRun longest_held_run(std::span<const uint32_t> run, size_t window_end, size_t lo) const;

   private:
    struct Chunk {
        uint64_t sequence = 0;
        uint32_t size = 0;
        uint64_t separators = 0;
        std::unique_ptr<uint32_t[]> ids;    // (chunk_ids)
        std::unique_ptr<uint32_t[]> links;  // (chunk_ids) distance back to the previous position of the bucket
    };

    const Chunk* chunk_by_sequence(uint64_t sequence) const;
    const Chunk* chunk_at(uint64_t position) const;
    bool live(uint64_t position) const;
    uint32_t id_at(uint64_t position) const;  // requires live(position)
    uint64_t newest_position() const;         // requires !empty() and a non-empty newest chunk
    size_t bucket_of(const uint32_t* window) const;
    // The live position a head or link names, or 0 (no position is 0:
    // sequence numbers start at 1).
    uint64_t head_position(size_t bucket) const;
    uint64_t previous_in_chain(uint64_t position) const;
    // Copies the 16-id window ending at `position` into `out` (it may span
    // two chunks) and returns a pointer to it.
    const uint32_t* window_at(uint64_t position, uint32_t* out) const;
    // How many ids, walking backwards from record[position] and from
    // q[n-1], are equal (never across a separator or a gap), up to n.
    size_t match_backward(uint64_t position, const uint32_t* q, size_t n) const;
    // How many ids from record[position] and q[0] onwards are equal, up to n.
    size_t match_forward(uint64_t position, const uint32_t* q, size_t n) const;

    uint32_t chunk_ids_;
    uint32_t shift_;  // log2(chunk_ids_)
    uint32_t bucket_shift_;
    std::unique_ptr<uint32_t[]> key_table_;  // (key_table_entries_) low 32 bits of chain heads
    size_t key_table_entries_;
    // Slots from front_sequence_ on, oldest first; null where a sequence
    // number has no chunk (a gap in the files found at start-up).
    std::deque<std::unique_ptr<Chunk>> slots_;
    uint64_t front_sequence_ = 0;
    size_t chunk_count_ = 0;
    uint64_t ids_ = 0;
    uint64_t separators_ = 0;
    uint32_t run_ = 0;  // ids since the last separator or segment boundary, capped at kKeyIds
};

}  // namespace tf::recall
