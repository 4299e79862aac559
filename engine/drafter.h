// Drafter: the copy window. Each round it builds a decoding stream's draft:
// first from the stream's own context, then, when the offer policy says a
// record copy is expected to land more, from the record. The draft is as
// long as it pays under the backend's cost curve.
//
// A record copy needs a match of at least 16 tokens and must be expected to
// land strictly more than the stream's recent own drafts; the own context is
// consulted first and keeps the draft on a tie (docs/recall.md, "Offer policy").
// A copy's window is priced by the round it joins: the other streams' rows
// of the stream's last round stand for the next one.
//
// The record-wide policy lives in recall::Record::offers() (thread-safe);
// each stream carries its own recall::StreamOfferState.
// Not thread-safe (one per engine thread); the record may be shared.
#pragma once

#include "engine/draft_window.h"
#include "engine/stream.h"
#include "recall/record.h"

namespace tf::engine {

struct DrafterOptions {
    int32_t max_draft = 32;           // longest window, in tokens
    bool own_context = true;          // draft from the stream's own context
    int32_t own_context_tokens = 32;  // longest own-context draft (serve --draft-tokens)
    // While a stream that drafts no copy shares the round, the round's copies
    // together may make it at most this much slower (0.2: 20%) than it would
    // be without them (draft_window.h, best_shared_window). 0.5 gained little
    // throughput and doubled p99 latency at concurrency 16 (docs/benchmarks.md).
    double copy_max_slowdown = 0.2;
};

// Everything a record lookup needs from the stream it drafts for, so that
// the lookup can run wherever the record is (a reader actor).
struct CopyQuery {
    std::vector<uint32_t> tail;  // the stream's last tokens, at most Drafter::kLookupTail
    int32_t room = 0;            // most draft tokens this round
    double own_expected = 0;     // tokens its own drafts landed per round lately
    recall::CopyHistory history = recall::CopyHistory::first;
    SharedRound others;         // the rest of the round the copy will join
    double max_slowdown = 0.2;  // DrafterOptions::copy_max_slowdown
    // What the own context would draft here, up to the room (empty when it
    // has no match): a record continuation it already holds adds nothing.
    std::vector<TokenId> own_continuation;
};

class Drafter {
public:
    // `record` may be null (Recall off).
    Drafter(CostCurve cost, DrafterOptions options, recall::Record* record = nullptr)
        : cost_(std::move(cost)), options_(options), record_(record) {}

    // The synchronous driver (Engine): own context, then the record.
    Draft next_draft(Stream& stream) const;
    // After the stream's round landed: feeds the outcome to both policies.
    void after_landing(Stream& stream) const;

    // The same in pieces, for drivers that reach the record through other
    // threads (the actors): the stream's side runs where the stream lives,
    // record_draft() and record_outcome() where the record is.
    int32_t start_round(Stream& stream) const;  // returns the room for a draft
    Draft own_context_draft(Stream& stream, int32_t room) const;
    bool may_ask_record(Stream& stream) const { return record_ && stream.offer_state().may_ask_record(); }
    static std::vector<uint32_t> lookup_tail(const Stream& stream);
    CopyQuery copy_query(const Stream& stream, int32_t room) const;
    // The record's copy for the query, or an empty draft. No copy when the
    // own context already holds the same continuation (counted on the
    // record): then an own-context draft of it, as long as the copy's window
    // would be. Else a copy as the offer policy decides, with the window
    // priced by the round the copy joins (draft_window.h, best_shared_window).
    static Draft record_draft(recall::Record& record, const CostCurve& cost, const CopyQuery& query);
    // The round's draft: the copy when there is one (noting the own draft
    // it displaces); the own continuation the record agreed with when it
    // runs further than the own draft; else the own draft.
    static Draft choose(Draft own, Draft copy);
    static void stream_outcome(Stream& stream);

    // Grafted lanes: the record's continuation as a second branch of the
    // round, verified beside the own-context draft. A grafted lane consults the
    // record every round while its grafts are landing, else only every eighth
    // round (docs/recall.md, "Offer policy"). Empty when the stream does not
    // ask this round or the record has no match; `asked` says whether it asked.
    Draft graft_draft(Stream& stream, int32_t room, bool* asked) const;
    // own_displaced: Stream::last_displaced_landed() of the copy's round.
    static void record_outcome(recall::Record& record, const Draft& draft, int32_t landed_drafts,
                               int32_t own_displaced);

    const CostCurve& cost() const { return cost_; }
    recall::Record* record() const { return record_; }

    // How many of the stream's last tokens a record lookup is given: enough
    // to tell the 64-or-more bucket from the shorter ones, with room to spare.
    static constexpr int32_t kLookupTail = 256;

private:
    CostCurve cost_;
    DrafterOptions options_;
    recall::Record* record_;
};

}  // namespace tf::engine
